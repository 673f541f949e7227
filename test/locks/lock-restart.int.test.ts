/**
 * What survives a restart of the service (docs/protocol.md: "the stream alone
 * rebuilds every actor's state") and `requestId` idempotency, within one
 * instance and across a restart on the same prefix.
 */
import { describe, expect, it } from "vitest";
import { uniquePrefix } from "../support/nats.ts";
import { dataOf, expectFailure, expectLease, expectOk, lockClient, lockEvents, useLockHarness } from "../support/lock-fixtures.ts";

const h = useLockHarness();

describe("restart", () => {
  it("a new service on the existing stream answers as the old one would", async () => {
    const prefix = uniquePrefix();
    const first = await h.service(prefix);
    const before = lockClient(first.nc, prefix);
    const l1 = expectLease(await before.acquire({ name: "n", owner: "alice" }));
    expectOk(await before.release({ name: "n", etag: l1.etag }));
    const held = expectLease(await before.acquire({ name: "n", owner: "bob" }));
    expect(held.generation).toBe(2);
    const released = expectLease(await before.acquire({ name: "free", owner: "carol" }));
    expectOk(await before.release({ name: "free", etag: released.etag }));
    const getHeld = await before.get({ name: "n" });
    await first.stop();

    const second = await h.service(prefix);
    const after = lockClient(second.nc, prefix);
    expect(await after.get({ name: "n" })).toEqual(getHeld);
    expectFailure(await after.acquire({ name: "n", owner: "dave" }), 409, "LEASE_EXISTS", { owner: "bob", expiresAt: held.expiresAt });
    expectFailure(await after.renew({ name: "n", owner: "bob", etag: l1.etag }), 409, "NOT_HELD");
    expectFailure(await after.release({ name: "free", etag: released.etag }), 410, "ALREADY_RELEASED");

    // The etag handed out before the restart still works.
    const renewed = expectLease(await after.renew({ name: "n", owner: "bob", etag: held.etag }));
    expect(renewed).toMatchObject({ owner: "bob", generation: 2 });
    expect(renewed.etag).not.toBe(held.etag);
    expectOk(await after.release({ name: "n", etag: renewed.etag }));
    expect(expectLease(await after.acquire({ name: "n", owner: "dave" })).generation).toBe(3);
    expect(expectLease(await after.acquire({ name: "free", owner: "erin" })).generation).toBe(2);
  });
});

describe("requestId", () => {
  it("answers a repeated acquire with the first reply and records one event, also across a restart", async () => {
    const prefix = uniquePrefix();
    const first = await h.service(prefix);
    const locks = lockClient(first.nc, prefix);
    const request = { name: "n", owner: "alice", requestId: "req-acquire-1" };
    const r1 = await locks.acquire(request);
    const lease = expectLease(r1);
    const r2 = await locks.acquire(request);
    expect(r2).toEqual(r1);
    // Without the requestId the same command is a new one, refused.
    expectFailure(await locks.acquire({ name: "n", owner: "alice" }), 409, "LEASE_EXISTS", { owner: "alice" });
    let events = await lockEvents(first.service, "n");
    expect(events).toHaveLength(1);
    expect(events[0]!.event.requestId).toBe("req-acquire-1");
    expect(dataOf(events[0]!.event)).toMatchObject({ owner: "alice", generation: 1, expiresAt: lease.expiresAt });
    await first.stop();

    const second = await h.service(prefix);
    const r3 = await lockClient(second.nc, prefix).acquire(request);
    expect(r3).toEqual(r1);
    events = await lockEvents(second.service, "n");
    expect(events).toHaveLength(1);
  });

  it("answers a repeated renew and release with their first replies", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const locks = lockClient(svc.nc, prefix);
    const lease = expectLease(await locks.acquire({ name: "n", owner: "alice" }));
    const renew = { name: "n", owner: "alice", etag: lease.etag, requestId: "renew-1" };
    const r1 = await locks.renew(renew);
    const renewed = expectLease(r1);
    // The original etag is stale now: only the remembered reply can make this succeed.
    expect(await locks.renew(renew)).toEqual(r1);
    const release = { name: "n", etag: renewed.etag, requestId: "release-1" };
    expect(expectOk(await locks.release(release))).toEqual({});
    expect(expectOk(await locks.release(release))).toEqual({});
    expectFailure(await locks.release({ name: "n", etag: renewed.etag }), 410, "ALREADY_RELEASED");
    expect((await lockEvents(svc.service, "n")).map((e) => e.event.type)).toEqual(["LockAcquired", "LockRenewed", "LockReleased"]);
  });

  it("decides a failed command again when it is repeated with the same requestId", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const locks = lockClient(svc.nc, prefix);
    const held = expectLease(await locks.acquire({ name: "n", owner: "alice" }));
    const bobs = { name: "n", owner: "bob", requestId: "bob-1" };
    expectFailure(await locks.acquire(bobs), 409, "LEASE_EXISTS", { owner: "alice" });
    expectOk(await locks.release({ name: "n", etag: held.etag }));
    const won = await locks.acquire(bobs);
    expect(expectLease(won)).toMatchObject({ owner: "bob", generation: 2 });
    // Now it succeeded, so a repeat is answered from memory.
    expect(await locks.acquire(bobs)).toEqual(won);
    const events = await lockEvents(svc.service, "n");
    expect(events.map((e) => [e.event.type, e.event.requestId])).toEqual([
      ["LockAcquired", undefined],
      ["LockReleased", undefined],
      ["LockAcquired", "bob-1"],
    ]);
  });
});
