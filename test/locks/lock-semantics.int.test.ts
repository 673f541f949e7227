/**
 * Lock behaviour of docs/protocol.md ("Locks") over NATS request/reply against a
 * real nats-server: acquire, renew, release, expiry, fencing generations,
 * concurrency on one lock and the TTL ceiling.
 */
import { describe, expect, it } from "vitest";
import { uniquePrefix } from "../support/nats.ts";
import {
  dataOf,
  expectFailure,
  expectLease,
  expectOk,
  lockClient,
  lockEvents,
  useLockHarness,
  waitUntilFree,
} from "../support/lock-fixtures.ts";

const h = useLockHarness();

/** A service on a fresh prefix and a lock client for it. */
async function setup(overrides: Parameters<typeof h.service>[1] = {}) {
  const prefix = uniquePrefix();
  const svc = await h.service(prefix, overrides);
  return { prefix, svc, service: svc.service, locks: lockClient(svc.nc, prefix) };
}

/** Short leases for the tests that wait for expiry. */
const SHORT = { lockTtlMs: 300, maxTtlMs: 300 };

describe("lock.acquire", () => {
  it("grants a fresh lock at generation 1 with the server's default ttl", async () => {
    const { locks, svc } = await setup();
    expect(svc.config.lockTtlMs).toBe(30_000);
    const before = Date.now();
    const lease = expectLease(await locks.acquire({ name: "orders", owner: "alice" }));
    const after = Date.now();
    expect(lease).toMatchObject({ name: "orders", owner: "alice", generation: 1, ttlMs: 30_000 });
    expect(typeof lease.etag).toBe("string");
    expect(lease.etag.length).toBeGreaterThan(0);
    expect(lease.expiresAt).toBe(new Date(lease.expiresAt).toISOString());
    const expires = Date.parse(lease.expiresAt);
    // The service decides on the same clock, between before and after: exact bounds, no slack.
    expect(expires).toBeGreaterThanOrEqual(before + 30_000);
    expect(expires).toBeLessThanOrEqual(after + 30_000);
    expect(expectOk(await locks.get({ name: "orders" })).lease).toEqual(lease);
  });

  it("honours an explicit ttlMs", async () => {
    const { locks } = await setup();
    const before = Date.now();
    const lease = expectLease(await locks.acquire({ name: "n", owner: "o", ttlMs: 1234 }));
    const after = Date.now();
    expect(lease.ttlMs).toBe(1234);
    expect(Date.parse(lease.expiresAt)).toBeGreaterThanOrEqual(before + 1234);
    expect(Date.parse(lease.expiresAt)).toBeLessThanOrEqual(after + 1234);
  });

  it("refuses a live lease with LEASE_EXISTS naming the holder, to other owners and to the holder itself", async () => {
    const { locks, service } = await setup();
    const lease = expectLease(await locks.acquire({ name: "orders", owner: "alice" }));
    for (const owner of ["bob", "alice"]) {
      const r = await locks.acquire({ name: "orders", owner });
      expectFailure(r, 409, "LEASE_EXISTS", { owner: "alice", expiresAt: lease.expiresAt });
    }
    expect(expectOk(await locks.get({ name: "orders" })).lease).toEqual(lease);
    // Failed commands append nothing.
    expect((await lockEvents(service, "orders")).map((e) => e.event.type)).toEqual(["LockAcquired"]);
  });

  it("grants an expired lock to a new owner at generation + 1, recording the expired holder as previousOwner", async () => {
    const { locks, service } = await setup(SHORT);
    const first = expectLease(await locks.acquire({ name: "job", owner: "alice" }));
    expect(first.ttlMs).toBe(300);
    await waitUntilFree(locks, "job");
    const second = expectLease(await locks.acquire({ name: "job", owner: "bob" }));
    expect(second).toMatchObject({ owner: "bob", generation: 2 });
    expect(second.etag).not.toBe(first.etag);

    const events = await lockEvents(service, "job");
    expect(events.map((e) => e.event.type)).toEqual(["LockAcquired", "LockAcquired"]);
    expect(dataOf(events[0]!.event)).toMatchObject({ owner: "alice", generation: 1, previousOwner: "" });
    expect(dataOf(events[1]!.event)).toMatchObject({
      owner: "bob",
      generation: 2,
      ttlMs: 300,
      expiresAt: second.expiresAt,
      previousOwner: "alice",
    });
    expect(events[1]!.event).toMatchObject({ kind: "lock", id: "job", v: 1 });
    expect(Date.parse(events[1]!.event.at)).toBeGreaterThanOrEqual(Date.parse(first.expiresAt));
  });

  it("lets exactly one of 32 concurrent acquires by the same owner win", async () => {
    const { locks, service } = await setup();
    const replies = await Promise.all(Array.from({ length: 32 }, () => locks.acquire({ name: "hot", owner: "same" })));
    const winners = replies.filter((r) => r.status === undefined);
    expect(winners).toHaveLength(1);
    const lease = expectLease(winners[0]!);
    expect(lease.generation).toBe(1);
    for (const r of replies.filter((x) => x !== winners[0])) {
      expectFailure(r, 409, "LEASE_EXISTS", { owner: "same", expiresAt: lease.expiresAt });
    }
    expect(await lockEvents(service, "hot")).toHaveLength(1);
  });

  it("lets exactly one of 32 concurrent acquires by different owners win", async () => {
    const { locks, service } = await setup();
    const replies = await Promise.all(Array.from({ length: 32 }, (_, i) => locks.acquire({ name: "hot", owner: `owner-${i}` })));
    const winners = replies.filter((r) => r.status === undefined);
    expect(winners).toHaveLength(1);
    const lease = expectLease(winners[0]!);
    expect(lease.generation).toBe(1);
    for (const r of replies.filter((x) => x !== winners[0])) {
      expectFailure(r, 409, "LEASE_EXISTS", { owner: lease.owner, expiresAt: lease.expiresAt });
    }
    const events = await lockEvents(service, "hot");
    expect(events).toHaveLength(1);
    expect(dataOf(events[0]!.event).owner).toBe(lease.owner);
  });

  it("refuses a ttlMs above maxTtlMs with TTL_EXCEEDS_MAX and its details", async () => {
    const { locks, service } = await setup();
    expectFailure(await locks.acquire({ name: "n", owner: "o", ttlMs: 30_001 }), 400, "TTL_EXCEEDS_MAX", {
      ttlMs: 30_001,
      maxTtlMs: 30_000,
    });
    expectLease(await locks.acquire({ name: "n", owner: "o", ttlMs: 30_000 }));
    expect(await lockEvents(service, "n")).toHaveLength(1);
  });

  it("checks the ttl ceiling before the lease (TTL_EXCEEDS_MAX wins over LEASE_EXISTS)", async () => {
    const { locks } = await setup({ lockTtlMs: 1000, maxTtlMs: 2000 });
    expectLease(await locks.acquire({ name: "n", owner: "a" }));
    expectFailure(await locks.acquire({ name: "n", owner: "b", ttlMs: 2001 }), 400, "TTL_EXCEEDS_MAX", { ttlMs: 2001, maxTtlMs: 2000 });
  });
});

describe("lock.renew", () => {
  it("moves expiresAt, keeps the generation, changes the etag and defaults to the lease's own ttl", async () => {
    const { locks, service } = await setup();
    const lease = expectLease(await locks.acquire({ name: "n", owner: "alice", ttlMs: 10_000 }));
    const renewed = expectLease(await locks.renew({ name: "n", owner: "alice", etag: lease.etag, ttlMs: 20_000 }));
    expect(renewed).toMatchObject({ name: "n", owner: "alice", generation: 1, ttlMs: 20_000 });
    expect(renewed.etag).not.toBe(lease.etag);
    expect(Date.parse(renewed.expiresAt)).toBeGreaterThanOrEqual(Date.parse(lease.expiresAt) + 10_000);

    const again = expectLease(await locks.renew({ name: "n", owner: "alice", etag: renewed.etag }));
    expect(again).toMatchObject({ generation: 1, ttlMs: 20_000 });
    expect(again.etag).not.toBe(renewed.etag);
    expect(Date.parse(again.expiresAt)).toBeGreaterThanOrEqual(Date.parse(renewed.expiresAt));
    expect(expectOk(await locks.get({ name: "n" })).lease).toEqual(again);

    // The replaced etag is stale now.
    expectFailure(await locks.renew({ name: "n", owner: "alice", etag: lease.etag }), 409, "NOT_HELD");
    const events = await lockEvents(service, "n");
    expect(events.map((e) => e.event.type)).toEqual(["LockAcquired", "LockRenewed", "LockRenewed"]);
    expect(dataOf(events[2]!.event)).toMatchObject({ owner: "alice", generation: 1, ttlMs: 20_000, expiresAt: again.expiresAt });
  });

  it("refuses a foreign owner presenting the holder's etag, and the holder still renews", async () => {
    const { locks, service } = await setup();
    const lease = expectLease(await locks.acquire({ name: "n", owner: "alice" }));
    expectFailure(await locks.renew({ name: "n", owner: "mallory", etag: lease.etag }), 409, "NOT_HELD");
    expect(expectOk(await locks.get({ name: "n" })).lease).toEqual(lease);
    const renewed = expectLease(await locks.renew({ name: "n", owner: "alice", etag: lease.etag }));
    expect(renewed).toMatchObject({ owner: "alice", generation: 1 });
    expect((await lockEvents(service, "n")).map((e) => e.event.type)).toEqual(["LockAcquired", "LockRenewed"]);
  });

  it("refuses renewing a lock never acquired, and a renew above maxTtlMs", async () => {
    const { locks } = await setup();
    expectFailure(await locks.renew({ name: "never", owner: "a", etag: "x" }), 409, "NOT_HELD");
    const lease = expectLease(await locks.acquire({ name: "n", owner: "a" }));
    expectFailure(await locks.renew({ name: "n", owner: "a", etag: lease.etag, ttlMs: 30_001 }), 400, "TTL_EXCEEDS_MAX", {
      ttlMs: 30_001,
      maxTtlMs: 30_000,
    });
  });

  it("succeeds after expiry when nobody acquired in between", async () => {
    const { locks } = await setup(SHORT);
    const lease = expectLease(await locks.acquire({ name: "n", owner: "alice" }));
    await waitUntilFree(locks, "n");
    const renewed = expectLease(await locks.renew({ name: "n", owner: "alice", etag: lease.etag }));
    expect(renewed).toMatchObject({ owner: "alice", generation: 1, ttlMs: 300 });
    expect(Date.parse(renewed.expiresAt)).toBeGreaterThan(Date.parse(lease.expiresAt));
  });

  it("refuses the old holder with NOT_HELD once another owner took the expired lock", async () => {
    // alice's lease is short; bob's is long, so it is still live when read back whatever the machine's speed.
    const { locks } = await setup({ lockTtlMs: 300, maxTtlMs: 60_000 });
    const old = expectLease(await locks.acquire({ name: "n", owner: "alice" }));
    await waitUntilFree(locks, "n");
    const thief = expectLease(await locks.acquire({ name: "n", owner: "bob", ttlMs: 60_000 }));
    expectFailure(await locks.renew({ name: "n", owner: "alice", etag: old.etag }), 409, "NOT_HELD");
    expect(expectOk(await locks.get({ name: "n" })).lease).toEqual(thief);
  });
});

describe("lock.release", () => {
  it("frees the lock for another owner, and a second release is ALREADY_RELEASED", async () => {
    const { locks, service } = await setup();
    const lease = expectLease(await locks.acquire({ name: "n", owner: "alice" }));
    expect(expectOk(await locks.release({ name: "n", etag: lease.etag }))).toEqual({});
    expect(expectOk(await locks.get({ name: "n" }))).toEqual({ lease: null, waiters: 0 });
    expectFailure(await locks.release({ name: "n", etag: lease.etag }), 410, "ALREADY_RELEASED");
    const bob = expectLease(await locks.acquire({ name: "n", owner: "bob" }));
    expect(bob).toMatchObject({ owner: "bob", generation: 2 });
    const events = await lockEvents(service, "n");
    expect(events.map((e) => e.event.type)).toEqual(["LockAcquired", "LockReleased", "LockAcquired"]);
    expect(dataOf(events[1]!.event)).toMatchObject({ owner: "alice", generation: 1 });
    expect(dataOf(events[2]!.event)).toMatchObject({ owner: "bob", generation: 2, previousOwner: "" });
  });

  it("is ALREADY_RELEASED for a lock never acquired, NOT_HELD for a wrong etag", async () => {
    const { locks } = await setup();
    expectFailure(await locks.release({ name: "never", etag: "whatever" }), 410, "ALREADY_RELEASED");
    const lease = expectLease(await locks.acquire({ name: "n", owner: "alice" }));
    expectFailure(await locks.release({ name: "n", etag: `${lease.etag}x` }), 409, "NOT_HELD");
    expect(expectOk(await locks.get({ name: "n" })).lease).toEqual(lease);
  });

  it("refuses the old holder with NOT_HELD after a steal, leaving the new lease alone", async () => {
    const { locks, service } = await setup(SHORT);
    const old = expectLease(await locks.acquire({ name: "n", owner: "alice" }));
    await waitUntilFree(locks, "n");
    expectLease(await locks.acquire({ name: "n", owner: "bob" }));
    expectFailure(await locks.release({ name: "n", etag: old.etag }), 409, "NOT_HELD");
    expect((await lockEvents(service, "n")).map((e) => e.event.type)).toEqual(["LockAcquired", "LockAcquired"]);
  });

  it("succeeds after expiry when nobody acquired in between", async () => {
    const { locks, service } = await setup(SHORT);
    const lease = expectLease(await locks.acquire({ name: "n", owner: "alice" }));
    await waitUntilFree(locks, "n");
    expect(expectOk(await locks.release({ name: "n", etag: lease.etag }))).toEqual({});
    expect(expectLease(await locks.acquire({ name: "n", owner: "bob" })).generation).toBe(2);
    const events = await lockEvents(service, "n");
    expect(dataOf(events[2]!.event)).toMatchObject({ generation: 2, previousOwner: "" });
  });
});

describe("fencing generation", () => {
  it("keeps rising across releases: acquire/release three times gives 1, 2, 3", async () => {
    const { locks, service } = await setup();
    const generations: number[] = [];
    for (let i = 0; i < 3; i++) {
      const lease = expectLease(await locks.acquire({ name: "n", owner: `owner-${i % 2}` }));
      generations.push(lease.generation);
      expectOk(await locks.release({ name: "n", etag: lease.etag }));
    }
    expect(generations).toEqual([1, 2, 3]);
    const acquired = (await lockEvents(service, "n")).filter((e) => e.event.type === "LockAcquired");
    expect(acquired.map((e) => dataOf(e.event).generation)).toEqual([1, 2, 3]);
  });
});
