/**
 * The service's side of principals, on a real nats-server with the service
 * in-process: with `--principals nats-request-info` it takes the principal
 * from `Nats-Request-Info` (here written by the test, standing in for the
 * server's service import; test/security/account-layout.int.test.ts shows the
 * server writing it), records it as `by`, refuses a holder-bound op from
 * another principal and an operator op from a non-operator `FORBIDDEN`, lets
 * an operator do both, and with `--require-principal` refuses an unknown one
 * `UNAUTHENTICATED`. Without `--principals` a client-written header counts for
 * nothing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { Subjects } from "../../src/contract/subjects.ts";
import { PrincipalSourceError } from "../../src/transport/principal-source.ts";
import { connectNats, startTestService, uniquePrefix, type TestService } from "../support/nats.ts";

const ALICE = { acc: "clients", user: "alice" };
const BOB = { acc: "clients", user: "bob" };
const CAROL = { acc: "ops", user: "carol" };
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

const open: (TestService | NatsConnection)[] = [];
afterEach(async () => {
  for (const x of open.splice(0).reverse()) await ("stop" in x ? x.stop() : x.close());
});

/** Sends `body` to `<prefix>.v1.<op>` as `who` (a Nats-Request-Info the test writes), or with no header. */
async function as(
  nc: NatsConnection,
  prefix: string,
  who: { acc: string; user?: string } | undefined,
  op: string,
  body: unknown,
): Promise<Record<string, unknown>> {
  const h = natsHeaders();
  if (who !== undefined) h.set("Nats-Request-Info", JSON.stringify({ ...who, rtt: 1000 }));
  return (await nc.request(`${prefix}.v1.${op}`, encode(body), { timeout: 10_000, headers: h })).json<Record<string, unknown>>();
}

async function setUp(overrides: Parameters<typeof startTestService>[1]) {
  const prefix = uniquePrefix();
  // The test writes Nats-Request-Info itself on a server without accounts, standing in for the import.
  const service = await startTestService(prefix, { principalSourceCheck: false, ...overrides });
  const nc = await connectNats();
  open.push(service, nc);
  return { prefix, nc };
}

/** Every event's type and `by` in the service's stream, in order. */
async function eventsBy(nc: NatsConnection, prefix: string): Promise<string[]> {
  const jsm = await jetstreamManager(nc);
  const stream = new Subjects(prefix).eventStream;
  const last = (await jsm.streams.info(stream)).state.last_seq;
  const out: string[] = [];
  for (let seq = 1; seq <= last; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    const e = m!.json<{ type: string; by?: string }>();
    out.push(`${e.type} ${e.by ?? "-"}`);
  }
  return out;
}

const forbiddenFor = (principal: string) => ({ error: expect.objectContaining({ code: "FORBIDDEN", principal }) as unknown });

describe("principals", () => {
  it("bind a lease, session and proxy lease to their creator, and operator ops to --operators", async () => {
    const { prefix, nc } = await setUp({ principals: "nats-request-info", operators: ["ops/*"] });

    const acquired = await as(nc, prefix, ALICE, "lock.acquire", { name: "l", owner: "a" });
    const etag = (acquired.lease as { etag: string }).etag;
    // Bob holds a valid etag and still is not the holder; a forged owner changes nothing.
    expect(await as(nc, prefix, BOB, "lock.renew", { name: "l", owner: "a", etag })).toEqual(forbiddenFor("clients/bob"));
    expect(await as(nc, prefix, BOB, "lock.release", { name: "l", etag })).toEqual(forbiddenFor("clients/bob"));
    expect(await as(nc, prefix, undefined, "lock.release", { name: "l", etag })).toEqual(forbiddenFor(""));
    // The contract's order: a bad request and a TTL over the ceiling come before the holder's FORBIDDEN.
    expect(await as(nc, prefix, BOB, "lock.renew", { name: "l", owner: "a", etag, ttlMs: 10 ** 9 })).toHaveProperty(
      "error.code",
      "TTL_EXCEEDS_MAX",
    );
    const renewed = await as(nc, prefix, ALICE, "lock.renew", { name: "l", owner: "a", etag });
    expect(renewed).toHaveProperty("lease.owner", "a");
    // An operator may release anyone's lease.
    expect(await as(nc, prefix, CAROL, "lock.release", { name: "l", etag: (renewed.lease as { etag: string }).etag })).toEqual({});

    // Operator ops: bob may not, carol may.
    expect(await as(nc, prefix, BOB, "lock.reset", { name: "l" })).toEqual(forbiddenFor("clients/bob"));
    expect(await as(nc, prefix, BOB, "host.set", { host: "h", healthy: true })).toEqual(forbiddenFor("clients/bob"));
    expect(await as(nc, prefix, BOB, "proxy.register", { proxy: "p", maxLeases: 2 })).toEqual(forbiddenFor("clients/bob"));
    expect(await as(nc, prefix, CAROL, "lock.reset", { name: "l" })).toEqual({});
    expect(await as(nc, prefix, CAROL, "host.set", { host: "h", healthy: true })).toEqual({ host: "h" });
    expect(await as(nc, prefix, CAROL, "proxy.register", { proxy: "p", maxLeases: 2 })).toEqual({ proxy: "p" });

    // A session and a proxy lease answer to the principal that created them.
    const session = (await as(nc, prefix, ALICE, "session.open", { owner: "a", ttlMs: 10_000 })).session as { id: string };
    expect(await as(nc, prefix, BOB, "session.keepalive", { id: session.id })).toEqual(forbiddenFor("clients/bob"));
    expect(await as(nc, prefix, BOB, "lock.acquire", { name: "s", owner: "a", session: session.id })).toEqual(forbiddenFor("clients/bob"));
    expect(await as(nc, prefix, ALICE, "lock.acquire", { name: "s", owner: "a", session: session.id })).toHaveProperty("lease.owner", "a");
    expect(await as(nc, prefix, BOB, "session.close", { id: session.id })).toEqual(forbiddenFor("clients/bob"));
    expect(await as(nc, prefix, ALICE, "session.close", { id: session.id })).toEqual({});
    const lease = (await as(nc, prefix, ALICE, "proxy.acquire", { ttlMs: 60_000 })).lease as { id: string };
    expect(await as(nc, prefix, BOB, "proxy.report", { leaseId: lease.id, result: "banned" })).toEqual(forbiddenFor("clients/bob"));
    expect(await as(nc, prefix, BOB, "proxy.release", { leaseId: lease.id })).toEqual(forbiddenFor("clients/bob"));
    expect(await as(nc, prefix, ALICE, "proxy.release", { leaseId: lease.id })).toEqual({});

    // Every event says who asked for it; refusals wrote nothing.
    expect(await eventsBy(nc, prefix)).toEqual([
      "LockAcquired clients/alice",
      "LockRenewed clients/alice",
      "LockReleased ops/carol",
      "LockReset ops/carol",
      "HostStateSet ops/carol",
      "ProxyRegistered ops/carol",
      "SessionOpened clients/alice",
      "LockAcquired clients/alice",
      "SessionClosed clients/alice",
      "ProxyLeaseGranted clients/alice",
      "ProxyLeaseReleased clients/alice",
    ]);
  });

  it("bind a lease granted from the wait queue to the waiter, with or without a session", async () => {
    const { prefix, nc } = await setUp({ principals: "nats-request-info", operators: ["ops/*"] });
    const queued = async (name: string) =>
      expect.poll(async () => (await as(nc, prefix, ALICE, "lock.get", { name })).waiters, { timeout: 5000 }).toBe(1);
    const session = (await as(nc, prefix, ALICE, "session.open", { owner: "a", ttlMs: 10_000 })).session as { id: string };
    for (const [name, extra] of [
      ["q", {}],
      ["qs", { session: session.id }],
    ] as const) {
      const held = (await as(nc, prefix, BOB, "lock.acquire", { name, owner: "b" })).lease as { etag: string };
      const waiting = as(nc, prefix, ALICE, "lock.acquire", { name, owner: "a", waitMs: 10_000, ...extra });
      await queued(name);
      expect(await as(nc, prefix, BOB, "lock.release", { name, etag: held.etag })).toEqual({});
      const granted = await waiting;
      expect(granted).toHaveProperty("lease.owner", "a");
      const etag = (granted.lease as { etag: string }).etag;
      // The grant is alice's: bob, with its etag, may not touch it.
      expect(await as(nc, prefix, BOB, "lock.release", { name, etag })).toEqual(forbiddenFor("clients/bob"));
      expect(await as(nc, prefix, ALICE, "lock.release", { name, etag })).toEqual({});
    }
    const grants = (await eventsBy(nc, prefix)).filter((e) => e.startsWith("LockAcquired"));
    expect(grants).toEqual([
      "LockAcquired clients/bob",
      "LockAcquired clients/alice",
      "LockAcquired clients/bob",
      "LockAcquired clients/alice",
    ]);
  });

  it("takes an account without a user as <acc>, and refuses an unknown principal with --require-principal", async () => {
    const { prefix, nc } = await setUp({ principals: "nats-request-info", requirePrincipal: true });
    expect(await as(nc, prefix, undefined, "lock.get", { name: "x" })).toMatchObject({ error: { code: "UNAUTHENTICATED" } });
    // UNAUTHENTICATED comes before BAD_REQUEST.
    expect(await as(nc, prefix, undefined, "lock.acquire", { name: 7 })).toMatchObject({ error: { code: "UNAUTHENTICATED" } });
    await as(nc, prefix, { acc: "team" }, "lock.acquire", { name: "x", owner: "o" });
    expect(await as(nc, prefix, { acc: "crew", user: "u" }, "lock.release", { name: "x", etag: "00000001" })).toEqual(
      forbiddenFor("crew/u"),
    );
    // A principal that proves only its account (a durable command) and a user of that account act for each other's
    // leases: what a client created by one path it touches by the other.
    await as(nc, prefix, { acc: "solo", user: "solo" }, "lock.acquire", { name: "y", owner: "o" });
    expect(await as(nc, prefix, { acc: "other" }, "lock.release", { name: "y", etag: "00000002" })).toEqual(forbiddenFor("other"));
    expect(await as(nc, prefix, { acc: "solo" }, "lock.release", { name: "y", etag: "00000002" })).toEqual({});
    expect(await as(nc, prefix, { acc: "team", user: "u" }, "lock.release", { name: "x", etag: "00000001" })).toEqual({});
    expect(await eventsBy(nc, prefix)).toEqual(["LockAcquired team", "LockAcquired solo/solo", "LockReleased solo", "LockReleased team/u"]);
  });

  it("count for nothing without --principals: a header the client wrote is not the server's", async () => {
    const { prefix, nc } = await setUp({});
    const acquired = await as(nc, prefix, ALICE, "lock.acquire", { name: "l", owner: "a" });
    expect(await as(nc, prefix, BOB, "lock.release", { name: "l", etag: (acquired.lease as { etag: string }).etag })).toEqual({});
    expect(await as(nc, prefix, BOB, "lock.reset", { name: "l" })).toEqual({});
    expect(await eventsBy(nc, prefix)).toEqual(["LockAcquired -", "LockReleased -", "LockReset -"]);
  });

  it("refuse to start in the global account, where every Nats-Request-Info is a client's", async () => {
    // This test server has no accounts: its users are in $G, where no request crosses a service import.
    const prefix = uniquePrefix();
    const started = startTestService(prefix, { principals: "nats-request-info" });
    await expect(started).rejects.toThrow(PrincipalSourceError);
    await expect(started).rejects.toThrow(/global account \(\$G\).*--layout accounts/);
    // Nothing was created: the check comes before the streams.
    const nc = await connectNats();
    open.push(nc);
    const jsm = await jetstreamManager(nc);
    await expect(jsm.streams.info(new Subjects(prefix).eventStream)).rejects.toThrow(/stream not found/);
  });
});
