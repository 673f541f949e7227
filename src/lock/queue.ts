/**
 * The lock's wait queue as arithmetic on instants (docs/locks.md, "Waiting
 * for a lock"). Nothing here runs a timer: where the queue stands at an
 * instant — who is head, whether its claim window is open, who lost their
 * place — follows from the recorded waiters, the lease's expiry and the
 * instant the lock became free, exactly as lease expiry follows from
 * `expiresAt`. The fold, the decider, the runtime's wake-ups and the audit
 * all read the queue through these functions, so they cannot disagree. The
 * waiters are a persistent queue (./waiter-queue.ts): no function here walks
 * them; each reads the head, a place found by halving, or a count the
 * queue's indexes keep, so a step costs O(log n) in the queue's length.
 */
import { WaiterQueue, type LockWaiter } from "./waiter-queue.ts";

export type { LockWaiter } from "./waiter-queue.ts";

/** The queue of every lock nobody waits for: one, not one per lock. */
export const NO_WAITERS: WaiterQueue = WaiterQueue.EMPTY;

/** What the queue arithmetic needs of a lock's state. */
export interface QueueSubject {
  readonly lease: { readonly expiresAtMs: number } | null;
  /** When the lock became free, while it has no lease (0: never held). */
  readonly freedAtMs: number;
  /** Waiters in the order they joined, those that may still matter. */
  readonly waiters: WaiterQueue;
  /** When `waiters.head` became head. */
  readonly headSinceMs: number;
}

/** The instant from which the lock is free if nothing happens: its lease's expiry, or when it was released. */
export function freeFrom(subject: QueueSubject): number {
  return subject.lease === null ? subject.freedAtMs : subject.lease.expiresAtMs;
}

/**
 * When a waiter that became head at `headSince` leaves the head, if nothing
 * else happens: at the end of its claim window (which opens when the lock is
 * free, or when it became head, whichever is later), or when its `until`
 * passes, whichever comes first; at once when its `until` passed already.
 */
export function leavesHeadAt(waiter: LockWaiter, headSince: number, free: number): number {
  const opens = Math.max(free, headSince);
  return Math.max(headSince, Math.min(waiter.untilMs, opens + waiter.claimWindowMs));
}

/**
 * The queue as it stands at `now`: waiters that left the head by then
 * (window over, `until` passed) are dropped, and `headSinceMs` is when the
 * remaining head became head. Returns `subject` itself when nothing changed.
 */
export function advanceQueue<S extends QueueSubject>(subject: S, now: number): S {
  const { waiters } = subject;
  const free = freeFrom(subject);
  let headSince = subject.headSinceMs;
  let left = 0;
  while (left < waiters.length) {
    // Waiters whose `until` (and join) are not after headSince would each leave the head at once: skipped by the index.
    if (headSince <= now) left = waiters.firstAfter(left, headSince);
    const waiter = waiters.at(left);
    if (waiter === undefined) break;
    headSince = Math.max(headSince, waiter.joinedAtMs);
    const leaves = leavesHeadAt(waiter, headSince, free);
    if (leaves > now) break;
    headSince = leaves;
    left++;
  }
  if (left === 0 && headSince === subject.headSinceMs) return subject;
  const next = waiters.at(left);
  return {
    ...subject,
    waiters: waiters.dropFront(left),
    headSinceMs: next === undefined ? headSince : Math.max(headSince, next.joinedAtMs),
  };
}

/** Where the queue stands at one instant. */
export interface QueueView {
  /** The head waiter, when there is a live one. */
  readonly head: LockWaiter | null;
  /** The head may take the lock now: the lock is free and the head's claim window is open. */
  readonly headMayClaim: boolean;
  /** When the head leaves the head (its window ends or its `until` passes), if nothing happens. */
  readonly headLeavesAtMs: number;
  /** How many waiters are still in the queue at `now` (not granted, `until` not passed, place not lost): counted by the queue's index. */
  readonly liveCount: number;
  /** The waiters still in the queue at `now`, in order: a walk, for tools and tests (a request reads {@link liveCount}). */
  readonly live: readonly LockWaiter[];
  /** The recorded waiters from the head on, live ones and those whose `until` passed behind the head. */
  readonly waiting: WaiterQueue;
}

const NO_VIEW: QueueView = { head: null, headMayClaim: false, headLeavesAtMs: 0, liveCount: 0, live: [], waiting: NO_WAITERS };

/** The queue of `subject` at `now`; the live waiters are counted or listed only when read (most decisions need the head alone). */
export function queueAt(subject: QueueSubject, now: number): QueueView {
  const at = advanceQueue(subject, now);
  const head = at.waiters.head;
  if (head === undefined) return NO_VIEW;
  const free = freeFrom(at);
  let liveCount: number | undefined;
  return {
    head,
    headMayClaim: free <= now,
    headLeavesAtMs: leavesHeadAt(head, at.headSinceMs, free),
    waiting: at.waiters,
    get liveCount() {
      return (liveCount ??= at.waiters.waitingAt(now));
    },
    get live() {
      return at.waiters.toArray().filter((w) => w.untilMs > now);
    },
  };
}

/**
 * The live place `seq` of `subject`'s queue at `now`, if any: found by
 * halving, the queue being in stream order, not by reading every waiter.
 */
export function livePlace(subject: QueueSubject, now: number, seq: number): LockWaiter | undefined {
  const { waiters } = advanceQueue(subject, now);
  const found = waiters.at(waiters.indexOfSeq(seq));
  return found !== undefined && found.untilMs > now ? found : undefined;
}

/**
 * How many live waiters `subject`'s queue holds at `now` when they are at
 * least `n`, else undefined: counted only when the recorded queue is that
 * long (waiters whose `until` passed stay recorded until they reach the head).
 */
export function liveCountFrom(subject: QueueSubject, now: number, n: number): number | undefined {
  if (subject.waiters.length < n) return undefined;
  const live = queueAt(subject, now).liveCount;
  return live >= n ? live : undefined;
}

/**
 * The first instant after `now` at which the queue may change by time alone
 * (the lease expires, the head leaves): when a parked request looks again.
 * Infinity when nothing is due.
 */
export function nextQueueChangeAt(subject: QueueSubject, now: number): number {
  const view = queueAt(subject, now);
  let next = Infinity;
  const expires = subject.lease?.expiresAtMs;
  if (expires !== undefined && expires > now) next = expires;
  if (view.head !== null) next = Math.min(next, view.headLeavesAtMs);
  return next;
}
