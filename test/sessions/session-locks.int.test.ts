/**
 * Locks held under a session (docs/protocol.md, "Sessions") against a real
 * nats-server: the lease is the session's (TTL, expiry that follows every
 * keepalive), the refusals, renew refused, every lock freed when the session
 * is closed or expires, a waiter granted on the session's end (from the
 * events' instants), a waiter under an ended session losing its place, and
 * the durable path.
 */
import { describe, expect, it, vi } from "vitest";
import { uniquePrefix } from "../support/nats.ts";
import { expectFailure, expectOk } from "../support/replies.ts";
import { expectLease, lockClient, lockEvents, useLockHarness } from "../support/lock-fixtures.ts";
import { createCommandStream, durableReplies, eventsOfKind } from "../support/durable.ts";
import { sessionClient, type SessionBody } from "../support/session-fixtures.ts";
import { watchLoopDelay } from "../support/loop-delay.ts";

const h = useLockHarness();

async function setup(overrides: Parameters<typeof h.service>[1] = {}) {
  const prefix = uniquePrefix();
  const svc = await h.service(prefix, overrides);
  const sessions = sessionClient(svc.nc, prefix);
  const openSession = async (owner: string, ttlMs?: number) =>
    expectOk(await sessions.open(ttlMs === undefined ? { owner } : { owner, ttlMs })).session!;
  return { prefix, svc, sessions, openSession, locks: lockClient(svc.nc, prefix) };
}

describe("locks under a session", () => {
  it("take the session's TTL and expiry, follow its keepalives, and are listed by session.get", async () => {
    const s = await setup();
    const session = await s.openSession("w", 5000);
    const a = expectLease(await s.locks.acquire({ name: "b", owner: "w", session: session.id }));
    const b = expectLease(await s.locks.acquire({ name: "a", owner: "w", session: session.id }));
    expect(a).toMatchObject({ owner: "w", generation: 1, ttlMs: 5000, expiresAt: session.expiresAt, session: session.id });
    expect(b.session).toBe(session.id);
    expect(expectOk(await s.sessions.get({ id: session.id })).locks).toEqual(["a", "b"]);
    const kept = expectOk(await s.sessions.keepalive({ id: session.id })).session!;
    expect(expectOk(await s.locks.get({ name: "a" })).lease).toEqual({ ...b, expiresAt: kept.expiresAt });
    const acquired = (await lockEvents(s.svc.service, "a"))[0]!.event;
    expect(acquired.data).toMatchObject({ session: session.id, ttlMs: 5000 });
  });

  it("refuse ttlMs with session, another owner, an unknown or ended session, and renew", async () => {
    const s = await setup();
    const session = await s.openSession("w");
    expectFailure(await s.locks.acquire({ name: "x", owner: "w", session: session.id, ttlMs: 100 }), 400, "BAD_REQUEST");
    expectFailure(await s.locks.acquire({ name: "x", owner: "v", session: session.id }), 400, "BAD_REQUEST");
    expectFailure(await s.locks.acquire({ name: "x", owner: "w", session: "nope" }), 404, "NO_SESSION");
    const lease = expectLease(await s.locks.acquire({ name: "x", owner: "w", session: session.id }));
    expectFailure(await s.locks.renew({ name: "x", owner: "w", etag: lease.etag }), 400, "BAD_REQUEST");
    expectOk(await s.sessions.close({ id: session.id }));
    expectFailure(await s.locks.acquire({ name: "y", owner: "w", session: session.id }), 404, "NO_SESSION");
  });

  it("are all free from the session's close, and release still works as in v1", async () => {
    const s = await setup();
    const session = await s.openSession("w");
    const names = ["l1", "l2", "l3"];
    const leases = await Promise.all(
      names.map(async (name) => expectLease(await s.locks.acquire({ name, owner: "w", session: session.id }))),
    );
    expectOk(await s.locks.release({ name: "l3", etag: leases[2]!.etag }));
    expectOk(await s.sessions.close({ id: session.id }));
    for (const name of names) expect(expectOk(await s.locks.get({ name })).lease).toBeNull();
    const next = expectLease(await s.locks.acquire({ name: "l1", owner: "other", ttlMs: 1000 }));
    expect(next).toMatchObject({ owner: "other", generation: 2 });
    expect((await lockEvents(s.svc.service, "l1")).at(-1)!.event.data).toMatchObject({ previousOwner: "w" });
  });

  it("are free once the session expires", async () => {
    const s = await setup({ lockTtlMs: 300, maxTtlMs: 300 });
    const session = await s.openSession("w");
    expectLease(await s.locks.acquire({ name: "e", owner: "w", session: session.id }));
    await vi.waitFor(async () => expect(expectOk(await s.locks.get({ name: "e" })).lease).toBeNull(), { timeout: 5000, interval: 25 });
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(session.expiresAt));
    expect(expectLease(await s.locks.acquire({ name: "e", owner: "v", ttlMs: 300 })).generation).toBe(2);
  });

  it("grant a waiter within 50 ms of the session's close, and drop a waiter whose session ends", async () => {
    const s = await setup();
    const holder = await s.openSession("w");
    expectLease(await s.locks.acquire({ name: "q", owner: "w", session: holder.id }));
    const waiting = s.locks.acquire({ name: "q", owner: "v", waitMs: 10_000 });
    await vi.waitFor(async () => expect(expectOk(await s.locks.get({ name: "q" })).waiters).toBe(1), { timeout: 5000, interval: 10 });
    const loop = watchLoopDelay();
    expectOk(await s.sessions.close({ id: holder.id }));
    const granted = expectLease(await waiting);
    const stalledMs = loop.stop();
    expect(granted).toMatchObject({ owner: "v", generation: 2 });
    const closedAt = Date.parse((await eventsOfKind(s.svc.nc, s.prefix, "session")).find((e) => e.type === "SessionClosed")!.at);
    const grantedAt = Date.parse((await lockEvents(s.svc.service, "q")).at(-1)!.event.at);
    expect(grantedAt - closedAt).toBeGreaterThanOrEqual(0);
    expect(grantedAt - closedAt).toBeLessThanOrEqual(50 + stalledMs);

    // A waiter under a session that ends before its turn loses its place (and is told NO_SESSION).
    const other = await s.openSession("u");
    const queued = s.locks.acquire({ name: "q", owner: "u", session: other.id, waitMs: 10_000 });
    await vi.waitFor(async () => expect(expectOk(await s.locks.get({ name: "q" })).waiters).toBe(1), { timeout: 5000, interval: 10 });
    expectOk(await s.sessions.close({ id: other.id }));
    expectFailure(await queued, 404, "NO_SESSION");
    expect(expectOk(await s.locks.get({ name: "q" })).waiters).toBe(0);
  });

  it("grant a waiter when the session expires, its claim window starting at the end", async () => {
    const s = await setup({ lockTtlMs: 300, maxTtlMs: 10_000 });
    const holder = await s.openSession("w");
    expectLease(await s.locks.acquire({ name: "t", owner: "w", session: holder.id }));
    const loop = watchLoopDelay();
    const granted = expectLease(await s.locks.acquire({ name: "t", owner: "v", ttlMs: 1000, waitMs: 5000 }));
    const stalledMs = loop.stop();
    const grantedAt = Date.parse((await lockEvents(s.svc.service, "t")).at(-1)!.event.at);
    expect(granted.generation).toBe(2);
    expect(grantedAt - Date.parse(holder.expiresAt)).toBeGreaterThanOrEqual(0);
    expect(grantedAt - Date.parse(holder.expiresAt)).toBeLessThanOrEqual(50 + stalledMs);
  });

  it("take lock.acquire with session as a durable command", async () => {
    const prefix = uniquePrefix();
    const nc = await h.connect();
    await createCommandStream(nc, prefix);
    const { replies, send, byRequestId } = durableReplies(nc, prefix);
    await send("session.open", { requestId: "d1", owner: "w" });
    await h.service(prefix);
    await vi.waitFor(() => expect(replies.messages.length).toBe(1), { timeout: 10_000, interval: 20 });
    const id = byRequestId<SessionBody>().get("d1")!.session!.id;
    await send("lock.acquire", { requestId: "d2", name: "dl", owner: "w", session: id });
    await send("lock.acquire", { requestId: "d3", name: "dm", owner: "w", session: "unknown" });
    await vi.waitFor(() => expect(replies.messages.length).toBe(3), { timeout: 10_000, interval: 20 });
    const by = byRequestId<SessionBody>();
    expect(by.get("d2")!.lease!.session).toBe(id);
    expect(by.get("d3")!.error!.code).toBe("NO_SESSION");
    replies.stop();
  });
});
