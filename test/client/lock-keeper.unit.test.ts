/**
 * The lock keeper's timing on fake timers, against a scripted lock API: when
 * it renews, what it sends, how it retries transient failures (same
 * requestId, until the local deadline), when it declares a loss, and how
 * close() releases.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  LeaseholdTimeoutError,
  LockClosedError,
  LockLostError,
  NotHeldError,
  AlreadyReleasedError,
  UnavailableError,
  CorruptError,
  keepLock,
  localDeadline,
  type KeeperLockApi,
  type LockLease,
  type LockRenewRequest,
  type CallOptions,
  type LeaseholdError,
  type LeaseholdErrorInit,
} from "../../src/client/index.ts";
import { fakeableTimers } from "../support/keeper-timers.ts";

const TTL = 3000;

const timers = fakeableTimers;

type Step = { reply: LockLease } | { error: Error } | { hang: true };

/** A lock API whose renews answer from a script (one step per call), recording what was sent and when. */
class ScriptedLocks implements KeeperLockApi {
  readonly renews: { at: number; request: LockRenewRequest; options: CallOptions | undefined }[] = [];
  readonly releases: { at: number; etag: string }[] = [];
  private serial = 0;
  script: Step[] = [];
  releaseError: Error | undefined;
  private pending: ((step: Step) => void) | undefined;
  private readonly reconnectListeners = new Set<() => void>();

  constructor(private readonly ttlMs = TTL) {}

  acquire() {
    return Promise.resolve({ lease: this.lease() });
  }

  renew(request: LockRenewRequest, options?: CallOptions) {
    this.renews.push({ at: Date.now(), request, options });
    const step = this.script.shift() ?? { reply: this.lease() };
    return this.answer(step, options?.signal);
  }

  onReconnect(listener: () => void) {
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  /** NATS reconnected: tells every listener. */
  reconnect(): void {
    for (const listener of this.reconnectListeners) listener();
  }

  get listening(): number {
    return this.reconnectListeners.size;
  }

  release(request: { etag: string }) {
    this.releases.push({ at: Date.now(), etag: request.etag });
    return this.releaseError === undefined ? Promise.resolve({}) : Promise.reject(this.releaseError);
  }

  /** A fresh lease of generation 7 with a new etag. */
  lease(ttlMs = this.ttlMs): LockLease {
    this.serial++;
    return {
      name: "job",
      owner: "me",
      generation: 7,
      etag: `e${this.serial}`,
      expiresAt: new Date(Date.now() + ttlMs).toISOString(),
      ttlMs,
    };
  }

  /** Answers the renew left hanging. */
  finish(step: Step): void {
    this.pending?.(step);
  }

  private answer(step: Step, signal: AbortSignal | undefined) {
    if ("hang" in step) {
      return new Promise<{ lease: LockLease }>((resolve, reject) => {
        this.pending = (s) => ("reply" in s ? resolve({ lease: s.reply }) : "error" in s ? reject(s.error) : undefined);
        signal?.addEventListener("abort", () => reject(signal.reason as Error), { once: true });
      });
    }
    return "reply" in step ? Promise.resolve({ lease: step.reply }) : Promise.reject(step.error);
  }
}

const refusal = (Class: new (code: string, message: string, init: LeaseholdErrorInit) => LeaseholdError, code: string, status: number) =>
  new Class(code, `${code} for the test`, { status });

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("LockKeeper timing", () => {
  it("renews every ttl / 3 with the latest etag, keeping the generation", async () => {
    const api = new ScriptedLocks();
    const t0 = Date.now();
    const keeper = await keepLock(api, { name: "job", owner: "me", ttlMs: TTL, timers }, 5000);
    expect(keeper.renewEveryMs).toBe(1000);
    await vi.advanceTimersByTimeAsync(999);
    expect(api.renews).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    await vi.advanceTimersByTimeAsync(3000);
    expect(api.renews.map((r) => r.at - t0)).toEqual([1000, 2000, 3000, 4000]);
    expect(api.renews.map((r) => r.request.etag)).toEqual(["e1", "e2", "e3", "e4"]);
    expect(api.renews.every((r) => r.request.ttlMs === TTL && r.request.owner === "me")).toBe(true);
    expect(new Set(api.renews.map((r) => r.request.requestId)).size).toBe(4);
    // Each attempt is bounded by the time left, and does not retry by itself.
    // (The deadline is the TTL less a quarter of it, the skew margin of a lease under 8 s.)
    expect(api.renews[0]!.options).toMatchObject({ timeoutMs: 1250, retry: false });
    expect([keeper.etag, keeper.generation, keeper.held]).toEqual(["e5", 7, true]);
    await keeper.close();
  });

  it("retries a transient failure with the same requestId, and recovers when a renew succeeds before the deadline", async () => {
    const api = new ScriptedLocks();
    const t0 = Date.now();
    const keeper = await keepLock(api, { name: "job", owner: "me", timers }, 5000);
    api.script = [{ error: new LeaseholdTimeoutError("s", 100, 1, "x") }, { error: refusal(UnavailableError, "UNAVAILABLE", 503) }];
    await vi.advanceTimersByTimeAsync(1500);
    const [first, second, third] = api.renews;
    expect([first!.at - t0, second!.at - t0, third!.at - t0]).toEqual([1000, 1166, 1332]);
    expect(new Set([first, second, third].map((r) => r!.request.requestId)).size).toBe(1);
    expect(third!.request.etag).toBe("e1");
    expect(keeper.held).toBe(true);
    // Back on schedule from the successful attempt.
    await vi.advanceTimersByTimeAsync(1000);
    expect(api.renews.at(-1)!.at - t0).toBe(2332);
    expect(api.renews.at(-1)!.request.requestId).not.toBe(first!.request.requestId);
    await keeper.close();
  });

  it("bounds each renew by the time the lease has left, and by the request timeout when that is shorter", async () => {
    const api = new ScriptedLocks(15_000);
    const t0 = Date.now();
    const keeper = await keepLock(api, { name: "job", owner: "me", ttlMs: 15_000, timers }, 5000);
    api.script = Array.from({ length: 100 }, () => ({ error: new LeaseholdTimeoutError("s", 100, 1, "x") }));
    await vi.advanceTimersByTimeAsync(15_000);
    expect((keeper.signal.reason as LockLostError).reason).toBe("expired");
    // Every 500 ms from the first renew at 5 s: 5 s of timeout at most while more than that is left before the local
    // deadline (the TTL less the 2 s skew margin), then what is left.
    const deadline = localDeadline(0, 15_000);
    const sent = api.renews.map((r) => [r.at - t0, r.options?.timeoutMs]);
    expect(sent[0]).toEqual([5000, 5000]);
    expect(sent.at(-1)).toEqual([deadline - 500, 500]);
    for (const [at, timeoutMs] of sent) expect(timeoutMs).toBe(Math.min(5000, deadline - at!));
    expect(api.listening).toBe(0);
  });

  it("after a reconnect, sends again at once a renew still waiting for its reply, and a retry waiting for its turn", async () => {
    const api = new ScriptedLocks(15_000);
    const t0 = Date.now();
    const keeper = await keepLock(api, { name: "job", owner: "me", ttlMs: 15_000, timers }, 5000);
    expect(api.listening).toBe(1);
    api.script = [{ hang: true }, { error: new LeaseholdTimeoutError("s", 100, 1, "x") }];
    await vi.advanceTimersByTimeAsync(6000);
    expect(api.renews.map((r) => r.at - t0)).toEqual([5000]);
    api.reconnect();
    await vi.advanceTimersByTimeAsync(0);
    // The hung renew, given up and sent again with its requestId; that try fails and waits its 500 ms turn...
    expect(api.renews.map((r) => r.at - t0)).toEqual([5000, 6000]);
    await vi.advanceTimersByTimeAsync(100);
    api.reconnect();
    await vi.advanceTimersByTimeAsync(0);
    // ...which a second reconnect cuts short.
    expect(api.renews.map((r) => r.at - t0)).toEqual([5000, 6000, 6100]);
    expect(new Set(api.renews.map((r) => r.request.requestId)).size).toBe(1);
    expect(keeper.held).toBe(true);
    // Back on schedule from the renew that succeeded; a reconnect while nothing is pending sends nothing.
    api.reconnect();
    await vi.advanceTimersByTimeAsync(4999);
    expect(api.renews).toHaveLength(3);
    await vi.advanceTimersByTimeAsync(1);
    expect(api.renews.at(-1)!.at - t0).toBe(11_100);
    await keeper.close();
    expect(api.listening).toBe(0);
  });

  it("declares the lock expired at the local deadline (the TTL less the skew margin) when no renew succeeds, calls onLost once and stops", async () => {
    const api = new ScriptedLocks();
    const lost: LockLostError[] = [];
    const t0 = Date.now();
    const keeper = await keepLock(api, { name: "job", owner: "me", timers, onLost: (e) => lost.push(e) }, 5000);
    api.script = Array.from({ length: 100 }, () => ({ error: refusal(UnavailableError, "UNAVAILABLE", 503) }));
    const deadline = localDeadline(0, TTL);
    await vi.advanceTimersByTimeAsync(deadline - 1);
    expect(keeper.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(keeper.signal.aborted).toBe(true);
    expect(Date.now() - t0).toBe(deadline);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toBe(keeper.signal.reason);
    expect([lost[0]!.reason, lost[0]!.generation]).toEqual(["expired", 7]);
    const attempts = api.renews.length;
    await vi.advanceTimersByTimeAsync(10 * TTL);
    expect(api.renews).toHaveLength(attempts);
    expect(lost).toHaveLength(1);
    // Lost: close() has nothing to release.
    await keeper.close();
    expect(api.releases).toEqual([]);
  });

  it("declares a loss at once on NOT_HELD or CORRUPT, without retrying", async () => {
    for (const [error, reason] of [
      [refusal(NotHeldError, "NOT_HELD", 409), "not-held"],
      [refusal(CorruptError, "CORRUPT", 500), "corrupt"],
    ] as const) {
      const api = new ScriptedLocks();
      const onLost = vi.fn();
      const keeper = await keepLock(api, { name: "job", owner: "me", timers, onLost }, 5000);
      api.script = [{ error }];
      await vi.advanceTimersByTimeAsync(1000);
      expect(onLost).toHaveBeenCalledTimes(1);
      const lost = keeper.signal.reason as LockLostError;
      expect([lost.reason, lost.cause]).toEqual([reason, error]);
      expect(keeper.lost).toBe(lost);
      await vi.advanceTimersByTimeAsync(5 * TTL);
      expect(api.renews).toHaveLength(1);
      expect(onLost).toHaveBeenCalledTimes(1);
    }
  });

  it("close() waits for a renew in flight, releases with the newest etag, and calls no onLost", async () => {
    const api = new ScriptedLocks();
    const onLost = vi.fn();
    const keeper = await keepLock(api, { name: "job", owner: "me", timers, onLost }, 5000);
    api.script = [{ hang: true }];
    await vi.advanceTimersByTimeAsync(1000);
    const closing = keeper.close();
    expect(keeper.signal.reason).toBeInstanceOf(LockClosedError);
    expect(api.releases).toEqual([]);
    api.finish({ reply: api.lease() });
    await closing;
    expect(api.releases.map((r) => r.etag)).toEqual(["e2"]);
    expect(keeper.close()).toBe(closing);
    await vi.advanceTimersByTimeAsync(5 * TTL);
    expect(api.renews).toHaveLength(1);
    expect(onLost).not.toHaveBeenCalled();
  });

  it("close() treats a lock already released or taken over as released, and passes other failures on", async () => {
    for (const error of [refusal(AlreadyReleasedError, "ALREADY_RELEASED", 410), refusal(NotHeldError, "NOT_HELD", 409)]) {
      const api = new ScriptedLocks();
      api.releaseError = error;
      const keeper = await keepLock(api, { name: "job", owner: "me", timers }, 5000);
      await keeper.close();
      expect(api.releases).toHaveLength(1);
    }
    const api = new ScriptedLocks();
    api.releaseError = new LeaseholdTimeoutError("s", 100, 2, "x");
    const keeper = await keepLock(api, { name: "job", owner: "me", timers }, 5000);
    await expect(keeper.close()).rejects.toBe(api.releaseError);
    // Renewing has stopped all the same.
    await vi.advanceTimersByTimeAsync(5 * TTL);
    expect(api.renews).toHaveLength(0);
  });

  it("a renew that answers after the local deadline does not revive the lock", async () => {
    const api = new ScriptedLocks();
    const keeper = await keepLock(api, { name: "job", owner: "me", timers }, 5000);
    api.script = [{ hang: true }];
    await vi.advanceTimersByTimeAsync(TTL);
    expect((keeper.signal.reason as LockLostError).reason).toBe("expired");
    api.finish({ reply: api.lease() });
    await vi.advanceTimersByTimeAsync(TTL);
    expect([keeper.held, keeper.etag]).toEqual([false, "e1"]);
    expect(api.renews).toHaveLength(1);
  });
});
