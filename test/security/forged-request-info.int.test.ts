/**
 * A client cannot pass for another by writing `Nats-Request-Info` more than
 * once. On the layout `nats-config --layout accounts` writes, the server
 * takes out one copy of a header the client wrote and adds its own after
 * the rest, so a client that wrote two copies left one standing before the
 * server's: read first, it named whoever the client claimed, and bob
 * released alice's lock as the operator. Tried with `leasehold serve` run as
 * a process with the flags nats-config prints: every request carrying a
 * copy the client wrote (in any letter case) has an unknown principal, so
 * bob is refused on alice's lock, session and proxy lease and on every
 * operator op, and nothing is appended.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { Subjects } from "../../src/contract/subjects.ts";
import type { NatsConfigOptions } from "../../src/security/nats-permissions.ts";
import { serveProcessOn, startLayoutNats, type LayoutNats } from "./layout-server.ts";

const PREFIX = "acme.lh";
const subjects = new Subjects(PREFIX);
const OPTIONS: NatsConfigOptions = { prefix: PREFIX, layout: "accounts", clients: ["alice", "bob"], operators: ["ops"] };
const OPERATOR = JSON.stringify({ acc: "ops", user: "ops" });
const ALICE = JSON.stringify({ acc: "alice", user: "alice" });
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** How a client may write the header besides once: each leaves a copy standing however the server adds its own. */
const FORGERIES: [string, [string, string][]][] = [
  [
    "the operator twice",
    [
      ["Nats-Request-Info", OPERATOR],
      ["Nats-Request-Info", OPERATOR],
    ],
  ],
  [
    "junk, then the operator",
    [
      ["Nats-Request-Info", "x"],
      ["Nats-Request-Info", OPERATOR],
    ],
  ],
  [
    "the holder, then junk",
    [
      ["Nats-Request-Info", ALICE],
      ["Nats-Request-Info", "{}"],
    ],
  ],
  [
    "another letter case",
    [
      ["nats-request-info", OPERATOR],
      ["NATS-REQUEST-INFO", OPERATOR],
    ],
  ],
];

let nats: LayoutNats;
let alice: NatsConnection;
let bob: NatsConnection;

/** The layout's nats-server (for the whole file) and `leasehold serve` on it with nats-config's flags (for one test). */
beforeAll(async () => {
  nats = await startLayoutNats({ options: OPTIONS });
  [alice, bob] = [await nats.as("alice"), await nats.as("bob")];
}, 60_000);

afterAll(() => nats?.stop());

/** `leasehold serve` on the layout (for one test). */
const startServe = () => serveProcessOn(nats.url, OPTIONS);

async function ask(nc: NatsConnection, op: string, body: unknown, written: [string, string][] = []): Promise<Record<string, unknown>> {
  const h = natsHeaders();
  for (const [k, v] of written) h.append(k, v);
  return (await nc.request(`${PREFIX}.v1.${op}`, encode(body), { timeout: 10_000, headers: h })).json<Record<string, unknown>>();
}

describe("a Nats-Request-Info header the client wrote more than once", () => {
  it.each(FORGERIES)(
    "(%s) makes the request's principal unknown: no lease, session, proxy lease or operator op of another",
    async (label, written) => {
      await startServe();
      const ops = await nats.as("ops");
      const tag = label.replace(/\W+/g, "-");
      const lease = (await ask(alice, "lock.acquire", { name: `l-${tag}`, owner: "alice", ttlMs: 30_000 })).lease as { etag: string };
      const session = (await ask(alice, "session.open", { owner: "alice", ttlMs: 30_000 })).session as { id: string };
      expect(await ask(ops, "proxy.register", { proxy: `p-${tag}`, maxLeases: 1 })).toEqual({ proxy: `p-${tag}` });
      const proxyLease = (await ask(alice, "proxy.acquire", { ttlMs: 30_000, candidates: [`p-${tag}`] })).lease as { id: string };
      const jsm = await jetstreamManager(ops);
      const before = (await jsm.streams.info(subjects.eventStream)).state.last_seq;

      const attempts: [string, unknown][] = [
        ["lock.release", { name: `l-${tag}`, etag: lease.etag }],
        ["lock.renew", { name: `l-${tag}`, owner: "alice", etag: lease.etag }],
        ["session.close", { id: session.id }],
        ["proxy.release", { leaseId: proxyLease.id }],
        ["lock.reset", { name: `l-${tag}` }],
        ["host.set", { host: `h-${tag}`, healthy: false }],
      ];
      for (const [op, body] of attempts) {
        expect(await ask(bob, op, body, written), `${op} by bob with ${label}`).toMatchObject({
          error: { code: "FORBIDDEN", principal: "" },
        });
      }
      expect((await jsm.streams.info(subjects.eventStream)).state.last_seq).toBe(before);
      expect(await ask(alice, "lock.get", { name: `l-${tag}` })).toHaveProperty("lease.owner", "alice");
    },
  );

  it("leaves a request without such a copy to the server's own header", async () => {
    await startServe();
    const lease = (await ask(alice, "lock.acquire", { name: "plain", owner: "alice", ttlMs: 30_000 })).lease as { etag: string };
    expect(await ask(bob, "lock.release", { name: "plain", etag: lease.etag })).toMatchObject({
      error: { code: "FORBIDDEN", principal: "bob/bob" },
    });
    // One copy the client wrote is replaced by the server's: the client is still itself.
    expect(await ask(bob, "lock.release", { name: "plain", etag: lease.etag }, [["Nats-Request-Info", OPERATOR]])).toMatchObject({
      error: { code: "FORBIDDEN", principal: "bob/bob" },
    });
    expect(await ask(alice, "lock.release", { name: "plain", etag: lease.etag })).toEqual({});
  });
});
