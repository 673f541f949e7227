/**
 * An operator's durable commands on the layout `nats-config --layout
 * accounts --operator ops` writes, with `leasehold serve` run as a process
 * with the flags it prints: a durable command proves only the account it
 * came from (`ops`), and `--operators ops/ops` named the user, so every
 * operator op an operator sent durably was `FORBIDDEN`. The printed flag
 * names the operator's account (`ops/*`): its durable `host.set` is carried
 * out, and a client's is still refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInbox, headers as natsHeaders, type NatsConnection } from "@nats-io/nats-core";
import type { NatsConfigOptions } from "../../src/security/nats-permissions.ts";
import { inboxPrefixOf } from "../../src/security/nats-permissions.ts";
import { serveProcessOn, startLayoutNats, type LayoutNats } from "./layout-server.ts";

const PREFIX = "acme.lh";
const OPTIONS: NatsConfigOptions = { prefix: PREFIX, layout: "accounts", clients: ["bob"], operators: ["ops"] };
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

let nats: LayoutNats;
beforeAll(async () => {
  nats = await startLayoutNats({ options: OPTIONS });
}, 60_000);
afterAll(() => nats?.stop());

/** Publishes a durable command as `user` and returns its answer on `Leasehold-Reply-To`. */
async function durableAs(nc: NatsConnection, user: string, op: string, body: unknown): Promise<Record<string, unknown>> {
  const inbox = createInbox(inboxPrefixOf(user));
  const sub = nc.subscribe(inbox, { max: 1, timeout: 10_000 });
  const h = natsHeaders();
  h.set("Leasehold-Reply-To", inbox);
  nc.publish(`${PREFIX}.cmd.${op}`, encode(body), { headers: h });
  for await (const m of sub) return m.json<Record<string, unknown>>();
  throw new Error("no answer");
}

describe("an operator's durable operator op", () => {
  it("is carried out with the flags nats-config prints, and a client's is refused", async () => {
    await serveProcessOn(nats.url, OPTIONS);
    const [ops, bob] = [await nats.as("ops"), await nats.as("bob")];
    expect(await durableAs(ops, "ops", "host.set", { host: "gpu-1", healthy: true, requestId: "ops-1" })).toEqual({ host: "gpu-1" });
    expect(await durableAs(bob, "bob", "host.set", { host: "gpu-1", healthy: false, requestId: "bob-1" })).toMatchObject({
      error: { code: "FORBIDDEN", principal: "bob" },
    });
  });
});
