/**
 * What a lock's wait queue costs per event (src/lock/waiters.ts,
 * src/lock/parked-waiters.ts), counted in index entries and parked requests
 * read, not timed: with 100 or 10,000 requests parked on one lock, an event
 * of that lock (a renewal, a join, a handover) reads the same few entries
 * and wakes only the request whose turn it is, and the lock's fold and
 * decisions take the log n growth of the queue's own steps
 * (src/lock/waiter-index.ts, `queueWork`); and `--max-waiters` refuses a
 * join past its bound with TOO_MANY_WAITERS, appending nothing.
 */
import { pino } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import { ActorRuntime } from "../../src/actors/actor-runtime.ts";
import type { TurnResult } from "../../src/actors/actor-runtime.ts";
import { LockWaiters } from "../../src/lock/waiters.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import type { LockSettings } from "../../src/lock/commands.ts";
import { queueWork } from "../../src/lock/waiter-index.ts";
import { DEFAULT_SETTINGS, T0 } from "../support/lock-given.ts";

const logger = pino({ level: "silent" });
const clock = { now: () => Date.now() };

afterEach(() => {
  vi.useRealTimers();
});

/** A runtime on an in-memory log, on fake timers, with lock waiters whose looks are counted. */
async function lockWithWaiters(settings: LockSettings = DEFAULT_SETTINGS) {
  vi.useFakeTimers({ now: T0 });
  const log = new MemoryEventLog({ now: () => clock.now(), dedupWindowMs: 120_000 });
  const runtime = new ActorRuntime({ log, subjects: new Subjects("t"), clock, logger, dedupWindowMs: 120_000 });
  const projection = runtime.register(lockLogic({ claimWindowMs: 5000, ...settings }));
  await projection.start();
  const reads: number[] = [];
  const waiters = new LockWaiters({ runtime, projection, clock, logger, monotonic: () => Date.now(), count: (n) => reads.push(n) });
  const answers = new Map<string, TurnResult>();
  const join = (owner: string, waitMs = 60_000) => void waiters.acquire("l", { owner, waitMs }).then((r) => answers.set(owner, r));
  const settle = async (parked: number) => {
    while (waiters.size !== parked) await vi.advanceTimersByTimeAsync(0);
    await vi.advanceTimersByTimeAsync(0);
  };
  const readsOf = async (event: () => Promise<unknown>) => {
    reads.length = 0;
    const steps = queueWork.steps;
    await event();
    await vi.advanceTimersByTimeAsync(0);
    return { entries: reads.reduce((a, b) => a + b, 0), steps: queueWork.steps - steps };
  };
  return { log, runtime, waiters, answers, join, settle, readsOf };
}

/** Reads per event of the lock with `n` requests parked on it: a renewal, one more join, and a handover to the head. */
async function costsWith(n: number) {
  const t = await lockWithWaiters();
  const holder = await t.runtime.execute("lock", "l", { op: "acquire", owner: "holder", ttlMs: 30_000 });
  const etag = holder.ok ? (holder.reply as { lease: { etag: string } }).lease.etag : "";
  for (let i = 0; i < n; i++) t.join(`w${i}`);
  await t.settle(n);
  const renewal = await t.readsOf(() => t.runtime.execute("lock", "l", { op: "renew", owner: "holder", etag }));
  const join = await t.readsOf(async () => {
    t.join("late");
    await t.settle(n + 1);
  });
  const renewed = await t.runtime.execute("lock", "l", { op: "get" });
  const etagNow = renewed.ok ? (renewed.reply as { lease: { etag: string } }).lease.etag : "";
  const handover = await t.readsOf(async () => {
    await t.runtime.execute("lock", "l", { op: "release", etag: etagNow });
    await t.settle(n);
  });
  expect(t.answers.get("w0")).toMatchObject({ ok: true, reply: { lease: { owner: "w0", generation: 2 } } });
  // Only the head was answered: everyone else is still parked.
  expect(t.answers.size).toBe(1);
  t.waiters.stop();
  await t.settle(0);
  return { renewal, join, handover };
}

describe("a lock's wait queue", () => {
  it("reads as many entries per event with 10,000 requests parked as with 100", async () => {
    const small = await costsWith(100);
    const large = await costsWith(10_000);
    const entries = (c: typeof small) => Object.values(c).map((r) => r.entries);
    expect(entries(large)).toEqual(entries(small));
    // A look reads the lock and the head: a handful of entries, not the queue.
    for (const reads of entries(large)) expect(reads).toBeLessThanOrEqual(4);
    // The fold and decisions behind each event: index steps growing as log n (x2 from 100 to 10,000), not n (x100).
    for (const [event, { steps }] of Object.entries(large)) {
      expect(steps, event).toBeLessThanOrEqual(2 * small[event as keyof typeof small].steps);
    }
  }, 60_000);

  it("refuses a join past --max-waiters with TOO_MANY_WAITERS, appends nothing, and counts only live waiters", async () => {
    const t = await lockWithWaiters({ ...DEFAULT_SETTINGS, maxWaiters: 3 });
    expect((await t.runtime.execute("lock", "l", { op: "acquire", owner: "holder", ttlMs: 30_000 })).ok).toBe(true);
    t.join("short", 1000);
    t.join("w2");
    t.join("w3");
    await t.settle(3);
    const before = await t.log.lastSeq();
    const refused = await t.runtime.execute("lock", "l", { op: "acquire", owner: "w4", waitMs: 10_000 });
    expect(refused).toMatchObject({
      ok: false,
      rejection: { code: "TOO_MANY_WAITERS", details: { waiters: 3, maxWaiters: 3 } },
    });
    expect(await t.log.lastSeq()).toBe(before);
    // Without waitMs the bound does not apply: the answer is the lock's.
    expect(await t.runtime.execute("lock", "l", { op: "acquire", owner: "w4" })).toMatchObject({ rejection: { code: "LEASE_EXISTS" } });
    // Once "short" gave up (its place is still recorded behind the holder), three live waiters are two.
    await vi.advanceTimersByTimeAsync(1000);
    await t.settle(2);
    expect(t.answers.get("short")).toMatchObject({ ok: false, rejection: { code: "LEASE_EXISTS" } });
    t.join("w4");
    await t.settle(3);
    t.waiters.stop();
    await t.settle(0);
  });
});
