/**
 * A flood of host loads, which any client may publish and every instance
 * receives, against `leasehold serve` run as a process on the per-user layout
 * `nats-config` writes. Past what the process reads, nats-server drops the
 * connection as a slow consumer; with the loads on the connection that
 * answers commands, that was every endpoint at once ("no responders" for
 * about 20 s, red team). The loads and discovery have a connection of their
 * own: it is the one dropped, and commands keep being answered.
 *
 * The server's `max_pending` is set low (1 MiB, default 64 MiB) so that a
 * flood this test can send in a second does what a longer one does.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConfigOptions } from "../../src/security/nats-permissions.ts";
import { serveProcessOn, startLayoutNats, type LayoutNats } from "./layout-server.ts";

const PREFIX = "acme.lh";
const OPTIONS: NatsConfigOptions = { prefix: PREFIX, layout: "users", clients: ["alice", "bob"] };
const LOADS = 200_000;

let nats: LayoutNats;
beforeAll(async () => {
  nats = await startLayoutNats({ options: OPTIONS, edit: (text) => `${text}\nmax_pending: 1048576\n` });
}, 60_000);
afterAll(() => nats?.stop());

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

describe("a flood of host loads", () => {
  it("costs the instance its loads connection for a moment, never the one commands arrive on", async () => {
    const serve = await serveProcessOn(nats.url, OPTIONS);
    const [alice, bob] = [await nats.as("alice"), await nats.as("bob")];
    const load = encode({ load: 1, padding: "x".repeat(160) });
    for (let i = 0; i < LOADS; i++) {
      alice.publish(`${PREFIX}.loads.flood-${i}`, load);
      if (i % 10_000 === 0) await alice.flush();
    }
    await alice.flush();
    const logged = (message: string) => serve.logs().some((line) => String(line.msg).startsWith(message));
    // The flood did what it does: the server dropped the connection that reads loads, and it came back.
    await expect.poll(() => logged("NATS connection for host loads and discovery was dropped and is back"), { timeout: 20_000 }).toBe(true);
    // Commands were answered throughout, on a connection the server never dropped.
    const answer = await bob.request(`${PREFIX}.v1.lock.get`, encode({ name: "x" }), { timeout: 10_000 });
    expect(answer.json()).toEqual({ lease: null, waiters: 0 });
    expect(logged("NATS connection lost")).toBe(false);
  });
});
