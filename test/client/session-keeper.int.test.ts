/**
 * The session keeper against a real service with a short TTL (600 ms, so a
 * keepalive every 200 ms): it keeps the session, and the locks taken in it,
 * across several TTLs (withLock releasing its own on the way out), its
 * signal aborts when the session is closed elsewhere (NO_SESSION on the next
 * keepalive, while a waiter on one of its locks is granted it) and when the
 * service is gone past the local deadline, and close() ends the session and
 * frees its locks. The exact instants are pinned with fake timers
 * in session-keeper.unit.test.ts.
 */
import { describe, expect, it } from "vitest";
import { LeaseExistsError, NoSessionError, SessionClosedError, SessionLostError } from "../../src/index.ts";
import { expectRejects, useClientHarness } from "./harness.ts";

const h = useClientHarness();
const TTL = 600;

/** Resolves with the signal's reason once it aborts. */
function abortReason(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason), { once: true }));
}

/** Resolves once the session's `expiresAt` has moved `n` times (n keepalives succeeded). */
async function keptAlive(read: () => string, n: number, timeoutMs = 10_000): Promise<void> {
  const seen = [read()];
  const deadline = performance.now() + timeoutMs;
  while (seen.length <= n) {
    if (performance.now() > deadline) throw new Error(`only ${seen.length - 1} keepalives in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
    if (read() !== seen.at(-1)) seen.push(read());
  }
}

describe("client.session", () => {
  it("open, keepalive, get and close on the wire; NO_SESSION after the close", async () => {
    const { client } = await h.start({ lockTtlMs: TTL, maxTtlMs: 5000 });
    const { session } = await client.session.open({ owner: "worker-1", ttlMs: 2000 });
    expect([session.owner, session.ttlMs]).toEqual(["worker-1", 2000]);
    const kept = await client.session.keepalive({ id: session.id });
    expect(Date.parse(kept.session.expiresAt)).toBeGreaterThanOrEqual(Date.parse(session.expiresAt));
    expect(await client.session.get({ id: session.id })).toEqual({ session: kept.session, locks: [] });
    await client.session.close({ id: session.id });
    expect(await client.session.get({ id: session.id })).toEqual({ session: null });
    await expectRejects(client.session.keepalive({ id: session.id }), NoSessionError, "NO_SESSION", 404);
  });

  it("keep() keeps the session alive across several TTLs, and close() ends it", async () => {
    const { client } = await h.start({ lockTtlMs: TTL, maxTtlMs: TTL });
    const session = await client.session.keep({ owner: "worker-1" });
    expect([session.session.ttlMs, session.keepaliveEveryMs, session.held]).toEqual([TTL, TTL / 3, true]);
    const start = performance.now();
    await keptAlive(() => session.session.expiresAt, 6);
    // Six keepalives (about two TTLs): the session outlived its first TTL by the keepalives alone.
    expect(performance.now() - start).toBeGreaterThan(TTL);
    expect((await client.session.get({ id: session.id })).session?.id).toBe(session.id);
    await session.close();
    expect(session.signal.reason).toBeInstanceOf(SessionClosedError);
    expect(await client.session.get({ id: session.id })).toEqual({ session: null });
  });

  it("aborts its signal with reason ended when the session is closed elsewhere", async () => {
    const { client, prefix } = await h.start({ lockTtlMs: TTL, maxTtlMs: TTL });
    const other = await h.client(prefix);
    const session = await client.session.keep({ owner: "worker-1" });
    const aborted = abortReason(session.signal);
    await other.session.close({ id: session.id });
    const reason = await aborted;
    expect(reason).toBeInstanceOf(SessionLostError);
    expect((reason as SessionLostError).reason).toBe("ended");
    await session.close();
  });

  it("takes locks under the session that follow its keepalives, withLock releases on the way out, and close frees the rest", async () => {
    const { client, prefix } = await h.start({ lockTtlMs: TTL, maxTtlMs: TTL });
    const other = await h.client(prefix);
    const session = await client.session.keep({ owner: "worker-1" });
    const a = await session.acquire("a");
    expect([a.lease.session, a.lease.owner, a.lease.ttlMs]).toEqual([session.id, "worker-1", TTL]);
    await session.acquire("b");
    const inside = await session.withLock("c", async (lock) => {
      expect(lock.signal.aborted).toBe(false);
      return (await client.session.get({ id: session.id })).locks;
    });
    expect(inside).toEqual(["a", "b", "c"]);
    expect((await client.session.get({ id: session.id })).locks).toEqual(["a", "b"]);
    // Held past several of its TTLs by the session's keepalives alone.
    await keptAlive(() => session.session.expiresAt, 6);
    const held = await other.lock.get({ name: "a" });
    expect([held.lease?.session, held.lease?.generation]).toEqual([session.id, a.generation]);
    await expectRejects(other.lock.acquire({ name: "a", owner: "worker-2" }), LeaseExistsError, "LEASE_EXISTS", 409);

    await session.close();
    expect((await other.lock.get({ name: "a" })).lease).toBeNull();
    expect((await other.lock.get({ name: "b" })).lease).toBeNull();
    const next = await other.lock.acquire({ name: "a", owner: "worker-2", ttlMs: TTL });
    expect(next.lease.generation).toBeGreaterThan(a.generation);
    await expect(session.acquire("d")).rejects.toBeInstanceOf(SessionClosedError);
  });

  it("a waiter on a lock of a session closed elsewhere is granted it, and the keeper's locks see the loss", async () => {
    const { client, prefix } = await h.start({ lockTtlMs: TTL, maxTtlMs: TTL });
    const other = await h.client(prefix);
    const session = await client.session.keep({ owner: "worker-1" });
    const lock = await session.acquire("job");
    const waiting = other.lock.acquire({ name: "job", owner: "worker-2", waitMs: 5000 });
    const aborted = abortReason(lock.signal);
    await other.session.close({ id: session.id });
    const { lease } = await waiting;
    expect([lease.owner, lease.generation]).toEqual(["worker-2", lock.generation + 1]);
    expect(((await aborted) as SessionLostError).reason).toBe("ended");
  });

  it("aborts its signal with reason expired when no keepalive is answered before its local deadline", async () => {
    const { client, svc } = await h.start({ lockTtlMs: TTL, maxTtlMs: TTL });
    const session = await client.session.keep({ owner: "worker-1" });
    const aborted = abortReason(session.signal);
    await svc.stop();
    const reason = (await aborted) as SessionLostError;
    expect(reason.reason).toBe("expired");
    expect(session.held).toBe(false);
  });
});
