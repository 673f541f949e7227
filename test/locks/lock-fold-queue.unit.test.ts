/**
 * The lock fold's wait queue, read straight from the state it folds: a grant
 * takes exactly the place it names out of the queue (none when it names
 * none), and `headSinceMs` says when the present head became head — when it
 * joined an empty queue, or when the head before it was granted the lock.
 */
import { describe, expect, it } from "vitest";
import { initialLockState } from "../../src/lock/state.ts";
import { evolveLock } from "../support/lock-logic.ts";
import type { HistoryEntry } from "../../src/events/envelope.ts";
import { iso, LOCK, lockEvent, T0 } from "../support/lock-given.ts";

const S = 1000;

const fold = (history: readonly HistoryEntry[]) => history.reduce(evolveLock, initialLockState(LOCK));

/** `LockWaiterQueued` by `owner` at `at`, waiting 60 s with a 1 s claim window. */
const queued = (seq: number, owner: string, at: number) =>
  lockEvent(seq, "LockWaiterQueued", { owner, until: iso(at + 60 * S), claimWindowMs: S }, at);

/** `LockAcquired` by `owner` at `at` for 10 s, naming the place `waiterSeq` when given. */
const granted = (seq: number, owner: string, generation: number, at: number, previousOwner: string, waiterSeq?: number) =>
  lockEvent(
    seq,
    "LockAcquired",
    {
      owner,
      generation,
      ttlMs: 10 * S,
      expiresAt: iso(at + 10 * S),
      previousOwner,
      ...(waiterSeq === undefined ? {} : { waiterSeq }),
    },
    at,
  );

/** Held by `holder` from T0 for 10 s (sequence 1); w1 joins at +1 s (sequence 2), w2 at +2 s (sequence 3). */
const HELD_WITH_TWO_WAITERS = [granted(1, "holder", 1, T0, ""), queued(2, "w1", T0 + S), queued(3, "w2", T0 + 2 * S)];

describe("the lock fold's wait queue", () => {
  it("makes the first waiter head at the instant it joins", () => {
    const state = fold(HELD_WITH_TWO_WAITERS.slice(0, 2));
    expect(state.waiters.map((w) => w.owner)).toEqual(["w1"]);
    expect(state.headSinceMs).toBe(T0 + S);
    // The second to join is not head: the head and its instant stay.
    expect(fold(HELD_WITH_TWO_WAITERS).headSinceMs).toBe(T0 + S);
  });

  it("a grant to the head takes its place, and the next waiter becomes head at the grant's instant", () => {
    const state = fold([...HELD_WITH_TWO_WAITERS, granted(4, "w1", 2, T0 + 10 * S, "holder", 2)]);
    expect(state.waiters.map((w) => w.seq)).toEqual([3]);
    expect(state.headSinceMs).toBe(T0 + 10 * S);
  });

  it("a grant to a place behind the head takes that place only; the head stays head since it became head", () => {
    const state = fold([...HELD_WITH_TWO_WAITERS, granted(4, "w2", 2, T0 + 5 * S, "holder", 3)]);
    expect(state.waiters.map((w) => w.seq)).toEqual([2]);
    expect(state.headSinceMs).toBe(T0 + S);
  });

  it("a grant naming no place, or a place not in the queue, leaves every waiter in place", () => {
    for (const waiterSeq of [undefined, 9]) {
      const state = fold([...HELD_WITH_TWO_WAITERS, granted(4, "x", 2, T0 + 5 * S, "holder", waiterSeq)]);
      expect(state.waiters.map((w) => w.seq)).toEqual([2, 3]);
      expect(state.headSinceMs).toBe(T0 + S);
    }
  });
});
