/**
 * When a parked lock acquire wakes (src/lock/waiters.ts): at the lease's
 * expiry, even when the clock reaches that expiry between the instant the
 * wait is looked at and the instant its wake-up is set. A timer may fire a
 * millisecond before the wall clock shows its instant; a wait that read the
 * clock twice would see the lease still live, then its expiry passed, and
 * sleep a whole recheck (1 s) before taking the lock (seen under load, 4 in
 * 150 runs of the session-expiry integration test).
 */
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ActorRuntime } from "../../src/actors/actor-runtime.ts";
import type { Clock } from "../../src/actors/clock.ts";
import type { TurnResult } from "../../src/actors/actor-runtime.ts";
import { LockWaiters } from "../../src/lock/waiters.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import { DEFAULT_SETTINGS, T0 } from "../support/lock-given.ts";

const logger = pino({ level: "silent" });
const TTL_MS = 1000;
const RECHECK_MS = 1000;

/** The fake timers' clock, but for the readings it is told to give next. */
class ScriptedClock implements Clock {
  readonly next: number[] = [];
  now(): number {
    return this.next.shift() ?? Date.now();
  }
}

afterEach(() => {
  vi.useRealTimers();
});

describe("a parked lock acquire", () => {
  it("takes the lock within a few milliseconds of the lease's expiry, however the clock moves between its readings", async () => {
    vi.useFakeTimers({ now: T0 });
    const clock = new ScriptedClock();
    const log = new MemoryEventLog({ now: () => clock.now(), dedupWindowMs: 120_000 });
    const runtime = new ActorRuntime({ log, subjects: new Subjects("t"), clock, logger, dedupWindowMs: 120_000 });
    const projection = runtime.register(lockLogic({ ...DEFAULT_SETTINGS, claimWindowMs: 5000 }));
    await projection.start();
    const waiters = new LockWaiters({ runtime, projection, clock, logger, monotonic: () => Date.now(), recheckMs: RECHECK_MS });
    const holder = await runtime.execute("lock", "l", { op: "acquire", owner: "holder", ttlMs: TTL_MS });
    expect(holder.ok).toBe(true);
    const expiresAt = T0 + TTL_MS;

    let answer: TurnResult | undefined;
    void waiters.acquire("l", { owner: "waiter", waitMs: 10_000 }).then((r) => (answer = r));
    await vi.advanceTimersByTimeAsync(TTL_MS - 2);
    expect(answer).toBeUndefined();
    // The wake-up fires at the expiry; the first reading is a millisecond short of it, the next one at it.
    clock.next.push(expiresAt - 1, expiresAt);
    await vi.advanceTimersByTimeAsync(10);
    expect(answer).toMatchObject({ ok: true, reply: { lease: { owner: "waiter", generation: 2 } } });
    expect(Date.now() - expiresAt).toBeLessThan(RECHECK_MS / 10);
  });
});
