/**
 * What a session's close costs the parked lock acquires of an instance
 * (src/lock/waiters.ts): it looks at the locks the session held, whose heads
 * may now take them, not at every lock with parked acquires. Looking at all
 * of them made each close cost as many looks as locks with waiters, so a
 * client opening and closing sessions while acquires waited on 10,000 locks
 * slowed another client's lock pair from 6 ms to 95 ms (p50). Counted here
 * as the parked requests and index entries the looks read (not time).
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { ActorRuntime, type TurnResult } from "../../src/actors/actor-runtime.ts";
import { ManualClock } from "../../src/actors/clock.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { LockTurns } from "../../src/lock/endpoints.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import { sessionHolding } from "../../src/lock/state.ts";
import { LockWaiters } from "../../src/lock/waiters.ts";
import { SessionTable, sessionLogic } from "../../src/session/index.ts";
import { DEFAULT_SETTINGS } from "../support/lock-given.ts";

const logger = pino({ level: "silent" });
const CLOSES = 20;

/** Reads by the looks of `CLOSES` session closes, with one acquire parked on each of `locks` held locks; and whether a close still frees its lock's waiter. */
async function readsPerCloses(locks: number): Promise<{ reads: number; heldLockTaken: boolean }> {
  const clock = new ManualClock();
  const log = new MemoryEventLog({ now: () => clock.now(), dedupWindowMs: 120_000 });
  const runtime = new ActorRuntime({ log, subjects: new Subjects("t"), clock, logger, dedupWindowMs: 120_000 });
  const projection = runtime.register(lockLogic({ ...DEFAULT_SETTINGS, claimWindowMs: 60_000 }));
  const sessions = runtime.register(sessionLogic({ lockTtlMs: DEFAULT_SETTINGS.lockTtlMs, maxTtlMs: DEFAULT_SETTINGS.maxTtlMs }));
  await Promise.all([projection.start(), sessions.start()]);
  const table = new SessionTable(sessions, projection, sessionHolding);
  const turns = new LockTurns(runtime, projection, table);
  let reads = 0;
  const waiters = new LockWaiters({ runtime, projection, clock, logger, turns, recheckMs: 3_600_000, count: (n) => (reads += n) });
  const ok = (r: TurnResult) => expect(r.ok, JSON.stringify(r)).toBe(true);

  ok(await runtime.execute("session", "holder", { op: "open", owner: "h", ttlMs: 30_000 }));
  ok(await turns.execute("by-session", { op: "acquire", owner: "h", session: "holder" }));
  const answers: Promise<TurnResult>[] = [waiters.acquire("by-session", { owner: "w", waitMs: 30_000 })];
  for (let i = 0; i < locks; i++) {
    ok(await turns.execute(`l${i}`, { op: "acquire", owner: "h", ttlMs: 30_000 }));
    answers.push(waiters.acquire(`l${i}`, { owner: "w", waitMs: 30_000 }));
  }
  await waitFor(() => waiters.size === locks + 1);

  reads = 0;
  for (let i = 0; i < CLOSES; i++) {
    ok(await runtime.execute("session", `s${i}`, { op: "open", owner: "o", ttlMs: 30_000 }));
    ok(await runtime.execute("session", `s${i}`, { op: "close" }));
  }
  await waitFor(() => true);
  const closesReads = reads;
  // The lock the closed session held is taken by its waiter.
  ok(await runtime.execute("session", "holder", { op: "close" }));
  const taken = await answers[0]!;
  waiters.stop();
  await Promise.allSettled(answers);
  return { reads: closesReads, heldLockTaken: taken.ok };
}

/** Lets microtasks and timers already due run until `done`. */
async function waitFor(done: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !done(); i++) await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  expect(done()).toBe(true);
}

describe("a session's close", () => {
  it("costs the parked acquires no more with waiters on 400 locks than on 20, and still frees the lock it held", async () => {
    const few = await readsPerCloses(20);
    const many = await readsPerCloses(400);
    expect(few.heldLockTaken && many.heldLockTaken).toBe(true);
    expect(many.reads).toBeLessThanOrEqual(few.reads + CLOSES);
  });
});
