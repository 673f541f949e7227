/**
 * A header block of 20,000 lines (800 KB, within the server's 1 MiB
 * max_payload) took the NATS client library 3.2 s of the event loop to
 * decode, and the service decoded every request's headers on the account
 * layout (for `Nats-Request-Info`) and every durable command's (for
 * `Leasehold-Reply-To`): one such message stalled every request for
 * seconds. Tried with `leasehold serve` run as a process with nats-config's
 * flags: a request whose header block passes 16 KiB names no one (its
 * headers are not read); on the one-machine default a durable command with
 * one (JetStream stores at most 64 KiB of headers) is refused as invalid,
 * its error on cmd-errors.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headers as natsHeaders } from "@nats-io/nats-core";
import type { NatsConfigOptions } from "../../src/security/nats-permissions.ts";
import { serveProcessOn, startLayoutNats, type LayoutNats } from "./layout-server.ts";
import { connect } from "@nats-io/transport-node";
import { defer, startLocalServe } from "../cli/cli-process.ts";
import { ask } from "./default-client.ts";

const PREFIX = "acme.lh";
const OPTIONS: NatsConfigOptions = { prefix: PREFIX, layout: "accounts", clients: ["bob"], operators: ["ops"] };
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** `lines` header lines of about 40 bytes each. */
function flood(lines = 20_000) {
  const h = natsHeaders();
  for (let i = 0; i < lines; i++) h.append(`X-K${i}`, "v".repeat(30));
  return h;
}

let nats: LayoutNats;
beforeAll(async () => {
  nats = await startLayoutNats({ options: OPTIONS });
}, 60_000);
afterAll(() => nats?.stop());

describe("a header block of thousands of lines", () => {
  it("makes a request's principal unknown without reading it, on the account layout", async () => {
    await serveProcessOn(nats.url, OPTIONS);
    const bob = await nats.as("bob");
    const request = async (op: string, body: unknown, h = natsHeaders()) =>
      (await bob.request(`${PREFIX}.v1.${op}`, encode(body), { timeout: 20_000, headers: h })).json<Record<string, unknown>>();
    const lease = (await request("lock.acquire", { name: "mine", owner: "bob" })).lease as { etag: string };
    // Bob's own lock, asked with the flood: nobody is named, so nobody may release it.
    expect(await request("lock.release", { name: "mine", etag: lease.etag }, flood())).toMatchObject({
      error: { code: "FORBIDDEN", principal: "" },
    });
    expect(await request("lock.release", { name: "mine", etag: lease.etag })).toEqual({});
  }, 60_000);

  it("is refused as invalid on a durable command, unread, on the one-machine default", async () => {
    const serve = await startLocalServe("header-flood");
    const nc = await connect({ servers: serve.url, maxReconnectAttempts: 0 });
    defer(() => nc.close());
    const errors = nc.subscribe("leasehold.cmd-errors.lock.acquire", { max: 1, timeout: 20_000 });
    nc.publish("leasehold.cmd.lock.acquire", encode({ name: "d", owner: "o", requestId: "flood-1" }), { headers: flood(1500) });
    for await (const m of errors) {
      expect(m.json<{ error: { code: string; message: string } }>().error).toMatchObject({
        code: "BAD_REQUEST",
        message: expect.stringMatching(/^headers: \d+ bytes, more than 16384/),
      });
    }
    expect(await ask(nc, "lock.get", { name: "d" })).toEqual({ lease: null, waiters: 0 });
  }, 60_000);
});
