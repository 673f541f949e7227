/**
 * The lock keeper against a real service with a short TTL (600 ms, so a
 * renew every 200 ms): it holds a lock across many TTLs under one fencing
 * token, notices a steal within one renew period and aborts its signal,
 * declares a loss when it cannot renew before the TTL runs out, and releases
 * on close (and at the end of an `await using` block).
 */
import { describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { LeaseExistsError, LockClosedError, LockLostError, type LockKeeper } from "../../src/index.ts";
import { expectRejects, useClientHarness } from "./harness.ts";

const h = useClientHarness();
const TTL = 600;
const RENEW = TTL / 3;
/** Scheduling and a round trip on a loaded 2-core machine. */
const SLACK = 250;

/** Resolves with the instant (performance.now) the signal aborts. */
function abortedAt(signal: AbortSignal): Promise<number> {
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(performance.now()), { once: true }));
}

/** Resolves once the keeper has renewed `n` more times (its etag changed n times). */
async function renewals(keeper: LockKeeper, n: number, timeoutMs = 10_000): Promise<string[]> {
  const etags = [keeper.etag];
  const deadline = performance.now() + timeoutMs;
  while (etags.length <= n) {
    if (performance.now() > deadline) throw new Error(`only ${etags.length - 1} renewals in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
    if (keeper.etag !== etags.at(-1)) etags.push(keeper.etag);
  }
  return etags;
}

describe("client.lock.keep", () => {
  it("holds the lock across several TTLs with one generation, then close() releases it", async () => {
    const { client, prefix } = await h.start({ lockTtlMs: TTL, maxTtlMs: TTL });
    const other = await h.client(prefix);
    const lost: LockLostError[] = [];
    const keeper = await client.lock.keep({ name: "job", owner: "worker-1", onLost: (e) => lost.push(e) });
    expect([keeper.generation, keeper.lease.ttlMs, keeper.renewEveryMs, keeper.held]).toEqual([1, TTL, RENEW, true]);
    const started = performance.now();

    const etags = await renewals(keeper, 6);
    // Six renews span more than two TTLs: without them the lease would have expired.
    expect(performance.now() - started).toBeGreaterThan(2 * TTL - RENEW);
    expect(new Set(etags).size).toBe(7);
    expect(keeper.generation).toBe(1);
    const { lease } = await other.lock.get({ name: "job" });
    expect(lease).toMatchObject({ owner: "worker-1", generation: 1 });
    await expectRejects(other.lock.acquire({ name: "job", owner: "worker-2" }), LeaseExistsError, "LEASE_EXISTS", 409);

    await keeper.close();
    expect(keeper.signal.aborted).toBe(true);
    expect(keeper.signal.reason).toBeInstanceOf(LockClosedError);
    expect([keeper.held, keeper.lost, lost]).toEqual([false, undefined, []]);
    expect(await other.lock.get({ name: "job" })).toEqual({ lease: null });
    // Released at once, not left to expire: the next holder gets the next fencing token.
    expect((await other.lock.acquire({ name: "job", owner: "worker-2" })).lease.generation).toBe(2);
    await keeper.close(); // idempotent
  });

  it("notices a steal after a forced expiry within one renew period, aborts its signal and calls onLost once", async () => {
    const { client, prefix } = await h.start({ lockTtlMs: TTL, maxTtlMs: TTL });
    const operator = await h.client(prefix);
    const lost: LockLostError[] = [];
    const keeper = await client.lock.keep({ name: "job", owner: "worker-1", onLost: (e) => lost.push(e) });
    const aborted = abortedAt(keeper.signal);
    await renewals(keeper, 1);

    // Forced expiry (an operator reset), then another owner takes the lock.
    await operator.lock.reset({ name: "job" });
    const { lease: thief } = await operator.lock.acquire({ name: "job", owner: "worker-2" });
    const stolenAt = performance.now();

    const at = await aborted;
    const noticedAfter = at - stolenAt;
    expect(noticedAfter).toBeLessThanOrEqual(RENEW + SLACK);
    const reason = keeper.signal.reason as LockLostError;
    expect(reason).toBeInstanceOf(LockLostError);
    expect([reason.reason, reason.lock, reason.generation]).toEqual(["not-held", "job", 1]);
    expect(lost).toEqual([reason]);
    expect(keeper.lost).toBe(reason);
    expect(keeper.held).toBe(false);
    expect(() => keeper.throwIfLost()).toThrow(reason);
    // The fencing token tells the two holders apart.
    expect(thief.generation).toBeGreaterThan(keeper.generation);

    // Closing a lost keeper releases nothing: the thief keeps the lock.
    await keeper.close();
    expect((await operator.lock.get({ name: "job" })).lease).toMatchObject({ owner: "worker-2", etag: thief.etag });
    expect(lost).toHaveLength(1);
    console.log(`steal noticed ${noticedAfter.toFixed(0)} ms after it happened (renew period ${RENEW} ms)`);
  });

  it("declares the lock expired when no renew succeeds within the TTL (the stream is unavailable)", async () => {
    const { client, svc, nc } = await h.start({ lockTtlMs: TTL, maxTtlMs: TTL });
    const keeper = await client.lock.keep({ name: "job", owner: "worker-1" });
    await renewals(keeper, 1);
    const lastRenewBy = performance.now();
    // Every renew now answers UNAVAILABLE (transient): the keeper retries until its local deadline.
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(svc.service.subjects.eventStream);
    const at = await abortedAt(keeper.signal);
    const reason = keeper.signal.reason as LockLostError;
    expect(reason.reason).toBe("expired");
    // Not before the lease could have expired on the server, and not much later.
    expect(at - lastRenewBy).toBeLessThanOrEqual(TTL + SLACK);
    expect(at - lastRenewBy).toBeGreaterThan(TTL - RENEW - SLACK);
    await keeper.close();
  });

  it("releases at the end of an `await using` block, and withLock releases when its function throws", async () => {
    const { client, prefix } = await h.start({ lockTtlMs: TTL, maxTtlMs: TTL });
    const other = await h.client(prefix);
    let signal: AbortSignal | undefined;
    {
      await using keeper = await client.lock.keep({ name: "scoped", owner: "worker-1", ttlMs: 500 });
      signal = keeper.signal;
      expect((await other.lock.get({ name: "scoped" })).lease).toMatchObject({ owner: "worker-1", ttlMs: 500 });
    }
    expect(signal.aborted).toBe(true);
    expect(await other.lock.get({ name: "scoped" })).toEqual({ lease: null });

    const failure = new Error("work failed");
    await expect(
      client.lock.withLock({ name: "scoped", owner: "worker-1" }, async (keeper) => {
        expect(keeper.generation).toBe(2);
        expect((await other.lock.get({ name: "scoped" })).lease?.owner).toBe("worker-1");
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await other.lock.get({ name: "scoped" })).toEqual({ lease: null });
    expect(await client.lock.withLock({ name: "scoped", owner: "worker-1" }, (k) => Promise.resolve(k.generation))).toBe(3);
    expect(await other.lock.get({ name: "scoped" })).toEqual({ lease: null });

    // A lock that is held cannot be kept: keep() throws the acquire's error.
    await other.lock.acquire({ name: "scoped", owner: "worker-2" });
    await expectRejects(client.lock.keep({ name: "scoped", owner: "worker-1" }), LeaseExistsError, "LEASE_EXISTS", 409);
  });
});
