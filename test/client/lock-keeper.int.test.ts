/**
 * The lock keeper against a real service with a short TTL (600 ms, so a
 * renew every 200 ms): it holds a lock across many TTLs under one fencing
 * token, notices a steal with the first renew after it and aborts its signal,
 * declares a loss when it cannot renew before the TTL runs out, and releases
 * on close (and at the end of an `await using` block). Timing is asserted
 * as the contract states it (server instants, the order of renews on the
 * wire, the keeper's own deadline), never against a fixed slack; the exact
 * instants are pinned with fake timers in lock-keeper.unit.test.ts.
 */
import { describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { LeaseExistsError, LeaseholdClient, LockClosedError, LockLostError, localDeadline, type LockKeeper } from "../../src/index.ts";
import { expectRejects, useClientHarness } from "./harness.ts";

const h = useClientHarness();
const TTL = 600;
const RENEW = TTL / 3;

/** Counts the renew requests of `prefix` as the server relays them to `nc`, calling `onRenew` at each. */
async function watchRenews(nc: NatsConnection, prefix: string, onRenew: () => void = () => undefined): Promise<{ count(): number }> {
  let count = 0;
  const sub = nc.subscribe(`${prefix}.v1.lock.renew`, {
    callback: () => {
      count++;
      onRenew();
    },
  });
  await nc.flush();
  h.defer(() => sub.unsubscribe());
  return { count: () => count };
}

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
    const firstExpiry = Date.parse(keeper.expiresAt);

    const etags = await renewals(keeper, 6);
    // Held past the first lease's expiry, on the server's own instants: without renews it would have expired.
    // (Six renews, one every TTL/3 at the earliest, were decided at least five periods, more than a TTL, after the acquire.)
    expect(Date.parse(keeper.expiresAt) - firstExpiry).toBeGreaterThan(TTL);
    expect(new Set(etags).size).toBe(7);
    expect(keeper.generation).toBe(1);
    const { lease } = await other.lock.get({ name: "job" });
    expect(lease).toMatchObject({ owner: "worker-1", generation: 1 });
    await expectRejects(other.lock.acquire({ name: "job", owner: "worker-2" }), LeaseExistsError, "LEASE_EXISTS", 409);

    await keeper.close();
    expect(keeper.signal.aborted).toBe(true);
    expect(keeper.signal.reason).toBeInstanceOf(LockClosedError);
    expect([keeper.held, keeper.lost, lost]).toEqual([false, undefined, []]);
    expect(await other.lock.get({ name: "job" })).toEqual({ lease: null, waiters: 0 });
    // Released at once, not left to expire: the next holder gets the next fencing token.
    expect((await other.lock.acquire({ name: "job", owner: "worker-2" })).lease.generation).toBe(2);
    await keeper.close(); // idempotent
  });

  it("notices a steal after a forced expiry with its first renew after it, aborts its signal and calls onLost once", async () => {
    const { client, prefix } = await h.start({ lockTtlMs: TTL, maxTtlMs: TTL });
    // The operator's connection also watches the renews: the server relays to it, in the order it received them,
    // both the renews and the reply that completes the steal.
    const operatorNc = await h.connect();
    const operator = new LeaseholdClient(operatorNc, { prefix });
    let stolen = false;
    let renewsAfterSteal = 0;
    await watchRenews(operatorNc, prefix, () => {
      if (stolen) renewsAfterSteal++;
    });
    const lost: LockLostError[] = [];
    const keeper = await client.lock.keep({ name: "job", owner: "worker-1", onLost: (e) => lost.push(e) });
    const aborted = abortedAt(keeper.signal);
    await renewals(keeper, 1);

    // Forced expiry (an operator reset), then another owner takes the lock.
    await operator.lock.reset({ name: "job" });
    const { lease: thief } = await operator.lock.acquire({ name: "job", owner: "worker-2" });
    stolen = true;
    const stolenAt = performance.now();

    const at = await aborted;
    // Within one renew period: no renew after the steal went unnoticed (the first one, or one racing it, told the keeper).
    expect(renewsAfterSteal).toBeLessThanOrEqual(1);
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
    console.log(`steal noticed ${(at - stolenAt).toFixed(0)} ms after it happened (renew period ${RENEW} ms)`);
  });

  it("declares the lock expired when no renew succeeds within the TTL (the stream is unavailable)", async () => {
    const { client, svc, nc, prefix } = await h.start({ lockTtlMs: TTL, maxTtlMs: TTL });
    // Every renew as it reaches the test: when, and the etag it renews (the one the previous success gave).
    const watcher = await h.connect();
    const renews: { at: number; etag: string }[] = [];
    const sub = watcher.subscribe(`${prefix}.v1.lock.renew`, {
      callback: (_e, m) => void renews.push({ at: performance.now(), etag: m.json<{ etag: string }>().etag }),
    });
    h.defer(() => sub.unsubscribe());
    await watcher.flush();
    const keeper = await client.lock.keep({ name: "job", owner: "worker-1" });
    await renewals(keeper, 1);
    // Every renew now answers UNAVAILABLE (transient): the keeper retries until its local deadline.
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(svc.service.subjects.eventStream);
    const at = await abortedAt(keeper.signal);
    const reason = keeper.signal.reason as LockLostError;
    expect(reason.reason).toBe("expired");
    // The last renew that succeeded is the one just before the first that carried its etag (renews go one at a time).
    const firstWithLastEtag = renews.findIndex((r) => r.etag === keeper.etag);
    expect(firstWithLastEtag).toBeGreaterThan(0);
    const lastSuccessSeenAt = renews[firstWithLastEtag - 1]!.at;
    // Not before the local deadline (the TTL less the skew margin) from when that renew was sent (seen here at most
    // half a renew period after it was sent), and the keeper kept trying until then.
    expect(at - lastSuccessSeenAt).toBeGreaterThanOrEqual(localDeadline(0, TTL) - RENEW / 2);
    expect(renews.length - firstWithLastEtag).toBeGreaterThanOrEqual(2);
    expect(keeper.held).toBe(false);
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
    expect(await other.lock.get({ name: "scoped" })).toEqual({ lease: null, waiters: 0 });

    const failure = new Error("work failed");
    await expect(
      client.lock.withLock({ name: "scoped", owner: "worker-1" }, async (keeper) => {
        expect(keeper.generation).toBe(2);
        expect((await other.lock.get({ name: "scoped" })).lease?.owner).toBe("worker-1");
        throw failure;
      }),
    ).rejects.toBe(failure);
    expect(await other.lock.get({ name: "scoped" })).toEqual({ lease: null, waiters: 0 });
    expect(await client.lock.withLock({ name: "scoped", owner: "worker-1" }, (k) => Promise.resolve(k.generation))).toBe(3);
    expect(await other.lock.get({ name: "scoped" })).toEqual({ lease: null, waiters: 0 });

    // A lock that is held cannot be kept: keep() throws the acquire's error.
    await other.lock.acquire({ name: "scoped", owner: "worker-2" });
    await expectRejects(client.lock.keep({ name: "scoped", owner: "worker-1" }), LeaseExistsError, "LEASE_EXISTS", 409);
  });
});
