/**
 * The lock's wait queue as arithmetic on instants (docs/locks.md, "Waiting
 * for a lock"). Nothing here runs a timer: where the queue stands at an
 * instant — who is head, whether its claim window is open, who lost their
 * place — follows from the recorded waiters, the lease's expiry and the
 * instant the lock became free, exactly as lease expiry follows from
 * `expiresAt`. The fold, the decider, the runtime's wake-ups and the audit
 * all read the queue through these functions, so they cannot disagree.
 */

/** One place in the queue, as its `LockWaiterQueued` recorded it. */
export interface LockWaiter {
  /** Stream sequence of the `LockWaiterQueued`: the place's identity and its order. */
  readonly seq: number;
  readonly owner: string;
  /** The requestId of the request that joined, or null: a retry with it keeps the place. */
  readonly requestId: string | null;
  /** When the wait ends (epoch ms); its ISO form is rendered where a reply needs it. */
  readonly untilMs: number;
  /** How long this waiter may take to claim the lock once it is head and the lock is free. */
  readonly claimWindowMs: number;
  /** When it joined (the event's instant). */
  readonly joinedAtMs: number;
  /** The session the acquire waits under while its end is not known to the lock (1.2); absent otherwise. */
  readonly session?: string;
}

/** The queue of every lock nobody waits for: one array, not one per lock. */
export const NO_WAITERS: readonly LockWaiter[] = Object.freeze([]);

/** `waiters` as a lock keeps them: {@link NO_WAITERS} when empty, so no lock holds an empty array of its own. */
export function asQueue(waiters: readonly LockWaiter[]): readonly LockWaiter[] {
  return waiters.length === 0 ? NO_WAITERS : waiters;
}

/** What the queue arithmetic needs of a lock's state. */
export interface QueueSubject {
  readonly lease: { readonly expiresAtMs: number } | null;
  /** When the lock became free, while it has no lease (0: never held). */
  readonly freedAtMs: number;
  /** Waiters in the order they joined, those that may still matter. */
  readonly waiters: readonly LockWaiter[];
  /** When `waiters[0]` became head. */
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
    const waiter = waiters[left]!;
    headSince = Math.max(headSince, waiter.joinedAtMs);
    const leaves = leavesHeadAt(waiter, headSince, free);
    if (leaves > now) break;
    headSince = leaves;
    left++;
  }
  if (left === 0 && headSince === subject.headSinceMs) return subject;
  const next = waiters[left];
  return {
    ...subject,
    waiters: asQueue(waiters.slice(left)),
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
  /** Waiters still in the queue at `now` (not granted, `until` not passed, place not lost), in order. */
  readonly live: readonly LockWaiter[];
  /** The recorded waiters from the head on, `live` ones and those whose `until` passed behind the head. */
  readonly waiting: readonly LockWaiter[];
}

/** The queue of `subject` at `now`; `live` is filtered only when read (most decisions need the head alone). */
export function queueAt(subject: QueueSubject, now: number): QueueView {
  const at = advanceQueue(subject, now);
  const head = at.waiters[0] ?? null;
  if (head === null) return { head: null, headMayClaim: false, headLeavesAtMs: 0, live: NO_WAITERS, waiting: NO_WAITERS };
  const free = freeFrom(at);
  let live: readonly LockWaiter[] | undefined;
  return {
    head,
    headMayClaim: free <= now,
    headLeavesAtMs: leavesHeadAt(head, at.headSinceMs, free),
    waiting: at.waiters,
    get live() {
      return (live ??= at.waiters.filter((w) => w.untilMs > now));
    },
  };
}

/**
 * The live place `seq` of `subject`'s queue at `now`, if any: found by
 * halving, the queue being in stream order, not by reading every waiter.
 */
export function livePlace(subject: QueueSubject, now: number, seq: number): LockWaiter | undefined {
  const { waiters } = advanceQueue(subject, now);
  let lo = 0;
  let hi = waiters.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (waiters[mid]!.seq < seq) lo = mid + 1;
    else hi = mid;
  }
  const found = waiters[lo];
  return found !== undefined && found.seq === seq && found.untilMs > now ? found : undefined;
}

/**
 * How many live waiters `subject`'s queue holds at `now` when they are at
 * least `n`, else undefined: counted only when the recorded queue is that
 * long (waiters whose `until` passed stay recorded until they reach the head).
 */
export function liveCountFrom(subject: QueueSubject, now: number, n: number): number | undefined {
  if (subject.waiters.length < n) return undefined;
  const live = queueAt(subject, now).live.length;
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
