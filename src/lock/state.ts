/**
 * The lock projection: a pure fold of one lock's history into its state.
 * Shared by the lock actor (hydration), the read endpoints and the tools, so
 * none of them can disagree about what a history means.
 */
import { type HistoryEntry, type RecordedEvent, isUnparsable } from "../events/envelope.ts";
import type { LockEvent } from "./events.ts";
import { instantMs } from "../events/envelope.ts";
import { WaiterQueue, type LockWaiter } from "./waiter-queue.ts";
import type { LockLease as ContractLockLease } from "../contract/messages.ts";

/**
 * The lease a lock currently records (expired or not: expiry is a function of
 * now). Only what cannot be derived is kept, as numbers where it can be: the
 * etag is the write's sequence ({@link leaseEtag}) and the ISO `expiresAt` is
 * the expiry's ({@link leaseExpiresAt}), rendered when a reply or a log
 * needs them. A service holding 100,000 leases keeps no string per lease but
 * its owner's (docs/performance.md, "Memory per held lock").
 */
export interface LockLease {
  readonly owner: string;
  readonly generation: number;
  /** The stream sequence of the write that set this lease: its etag. */
  readonly seq: number;
  readonly ttlMs: number;
  /** {@link OPEN_END} while the lease hangs on a session whose end the lock's history does not know yet. */
  readonly expiresAtMs: number;
  /** The session the lease hangs on; absent for a lease of its own. */
  readonly session?: string;
  /** A session lease's expiry as its grant wrote it: its `expiresAt` while its end is {@link OPEN_END}. */
  readonly grantedUntilMs?: number;
  /** The principal whose request created the lease (its `LockAcquired`'s `by`); absent when unknown. Only it, or an operator, may renew or release it. */
  readonly by?: string;
}

/**
 * The end of a session lease as the lock's own history knows it before its
 * session ended: never by time alone (the session's keepalives, not the
 * lock's events, move it), so the fold's queue arithmetic treats it as held.
 * Decisions read the session's real end (src/lock/session-waiters.ts).
 */
export const OPEN_END = Number.MAX_SAFE_INTEGER;

/** The session the lock's lease hangs on while the lock's history does not know that session's end; undefined otherwise. */
export function sessionHolding(state: LockState): string | undefined {
  return state.lease?.session !== undefined && state.lease.expiresAtMs === OPEN_END ? state.lease.session : undefined;
}

/** One lock's state. */
export interface LockState {
  readonly name: string;
  /** The recorded lease; null when released, reset or never acquired. */
  readonly lease: LockLease | null;
  /** The highest generation ever granted (or carried by a reset). */
  readonly generation: number;
  /** Why the history cannot be trusted, until a reset; null when sound. */
  readonly corrupt: string | null;
  /** When the lock became free, while `lease` is null (0: never held). */
  readonly freedAtMs: number;
  /** The wait queue as of the last event (src/lock/state.ts reads it at any instant): persistent, shared with the lock's earlier states. */
  readonly waiters: WaiterQueue;
  /** When `waiters.head` became head. */
  readonly headSinceMs: number;
}

/**
 * A lock's state as a snapshot gives it back: snapshots keep the queue as a
 * plain array of waiters (since fold version 5), made a queue again here, in
 * the state given (decoded for this call alone).
 */
export function reviveLockState(state: LockState): LockState {
  // A snapshot's queue is an array: iterable as a queue is, and read as one here.
  const waiters: unknown = state.waiters;
  if (waiters instanceof WaiterQueue) return state;
  // Most locks have nobody waiting: they share the one empty queue, with no buffer made for each and dropped.
  const queue = (waiters as readonly LockWaiter[]).length === 0 ? NO_WAITERS : WaiterQueue.from(waiters as readonly LockWaiter[]);
  // In place: a start from snapshots would otherwise copy every lock's state once more.
  (state as { waiters: WaiterQueue }).waiters = queue;
  return state;
}

/** A lock's state as a snapshot keeps it: its queue as a plain array ({@link reviveLockState} reads it back). */
export function persistedLockState(state: LockState): LockState {
  return { ...state, waiters: state.waiters.toArray() } as unknown as LockState;
}

/** The state of a lock with no history. */
export function initialLockState(name: string): LockState {
  return { name, lease: null, generation: 0, corrupt: null, freedAtMs: 0, waiters: NO_WAITERS, headSinceMs: 0 };
}

/**
 * The etag of the lease written at stream sequence `seq`: opaque to clients,
 * unique per write, and the same on every replay.
 */
export function etagOf(seq: number): string {
  return seq.toString(36).padStart(8, "0");
}

/** The etag of a lease: its write's, {@link etagOf}. */
export function leaseEtag(l: LockLease): string {
  return etagOf(l.seq);
}

/** When a lease expires as the wire shows it; a session lease whose end is not known shows its grant's expiry. */
export function leaseExpiresAt(l: LockLease): string {
  return new Date(l.expiresAtMs === OPEN_END ? (l.grantedUntilMs ?? OPEN_END) : l.expiresAtMs).toISOString();
}

/*
 * The lock's fold, one step per event type. The lock's XState statechart
 * (src/lock/logic.ts) composes them: which step applies, and which
 * state the lock is in after it, is the machine's to say, so there is no
 * second dispatch here. Entries that break the lock's invariants mark it
 * corrupt; each step first brings the queue to the event's instant.
 */

/** A message that did not parse: the lock refuses its history from here. */
export function markUnparsable(state: LockState, entry: HistoryEntry): LockState {
  return { ...state, corrupt: `event at sequence ${entry.seq} does not parse (${isUnparsable(entry) ? entry.reason : "unknown"})` };
}

/** An event of a type no lock writes. */
export function markForeign(state: LockState, entry: RecordedEvent): LockState {
  return { ...state, corrupt: `event at sequence ${entry.seq} has a type no lock writes (${entry.event.type})` };
}

/** A waiter joins the queue (after the queue is brought to the event's instant). */
export function applyWaiterQueued(before: LockState, entry: RecordedEvent<LockEvent>): LockState {
  const event = entry.event as Extract<LockEvent, { type: "LockWaiterQueued" }>;
  const atMs = instantMs(event.at);
  const state = advanceQueue(before, atMs);
  const d = event.data;
  const waiter: LockWaiter = {
    seq: entry.seq,
    owner: d.owner,
    requestId: event.requestId ?? null,
    untilMs: instantMs(d.until),
    claimWindowMs: d.claimWindowMs,
    joinedAtMs: atMs,
    ...(d.session === undefined ? {} : { session: d.session }),
  };
  return { ...state, waiters: state.waiters.push(waiter), headSinceMs: state.waiters.length === 0 ? atMs : state.headSinceMs };
}

/** Does this `LockAcquired` break the generation rule (each acquisition the one after the highest so far)? */
export function acquiredBreaks(state: LockState, entry: RecordedEvent<LockEvent>): boolean {
  return (entry.event as Extract<LockEvent, { type: "LockAcquired" }>).data.generation !== state.generation + 1;
}

/** A lease is granted; a grant to a waiter takes its place out of the queue, and the next one becomes head now. */
export function applyAcquired(before: LockState, entry: RecordedEvent<LockEvent>): LockState {
  const event = entry.event as Extract<LockEvent, { type: "LockAcquired" }>;
  const atMs = instantMs(event.at);
  const state = advanceQueue(before, atMs);
  const d = event.data;
  const seq = entry.seq;
  const place = d.waiterSeq === undefined ? -1 : state.waiters.indexOfSeq(d.waiterSeq);
  // The decider grants only the head (its place leaves by moving the queue's start); another place is taken out by a copy.
  const waiters = place < 0 ? state.waiters : state.waiters.without(place);
  const headSinceMs = place === 0 ? atMs : state.headSinceMs;
  const corrupt = acquiredBreaks(state, entry)
    ? `LockAcquired at sequence ${seq} has generation ${d.generation}, expected ${state.generation + 1}`
    : state.corrupt;
  return {
    ...state,
    corrupt,
    generation: Math.max(state.generation, d.generation),
    lease: leaseOf(d, seq, event.by),
    waiters,
    headSinceMs,
  };
}

/** Does this `LockRenewed` fail to match the current lease? */
export function renewedBreaks(state: LockState, entry: RecordedEvent<LockEvent>): boolean {
  const d = (entry.event as Extract<LockEvent, { type: "LockRenewed" }>).data;
  const held = state.lease;
  return held === null || held.generation !== d.generation || held.owner !== d.owner;
}

/** The current lease is extended. */
export function applyRenewed(before: LockState, entry: RecordedEvent<LockEvent>): LockState {
  const event = entry.event as Extract<LockEvent, { type: "LockRenewed" }>;
  const state = advanceQueue(before, instantMs(event.at));
  const d = event.data;
  const corrupt = renewedBreaks(state, entry) ? `LockRenewed at sequence ${entry.seq} does not match the current lease` : state.corrupt;
  // A renewal keeps the lease's creator: the holder, not whoever renewed.
  return { ...state, corrupt, lease: leaseOf(d, entry.seq, state.lease?.by) };
}

/** Does this `LockReleased` fail to match the current lease? */
export function releasedBreaks(state: LockState, entry: RecordedEvent<LockEvent>): boolean {
  const held = state.lease;
  return held === null || held.generation !== (entry.event as Extract<LockEvent, { type: "LockReleased" }>).data.generation;
}

/** The current lease is given up. */
export function applyReleased(before: LockState, entry: RecordedEvent<LockEvent>): LockState {
  const atMs = instantMs(entry.event.at);
  const state = advanceQueue(before, atMs);
  const corrupt = releasedBreaks(state, entry) ? `LockReleased at sequence ${entry.seq} does not match the current lease` : state.corrupt;
  return { ...state, corrupt, lease: null, freedAtMs: freedAt(state, atMs) };
}

/** A reset is the operator's word: nothing before it counts any more (waiters keep their places). */
export function applyReset(before: LockState, entry: RecordedEvent<LockEvent>): LockState {
  const event = entry.event as Extract<LockEvent, { type: "LockReset" }>;
  const atMs = instantMs(event.at);
  const state = advanceQueue(before, atMs);
  return {
    ...state,
    corrupt: null,
    lease: null,
    freedAtMs: freedAt(state, atMs),
    generation: Math.max(state.generation, event.data.generation),
  };
}

/** When the lock became free, given it is freed at `atMs`: an expired lease freed it at its expiry already. */
function freedAt(state: LockState, atMs: number): number {
  return state.lease === null ? state.freedAtMs : Math.min(atMs, state.lease.expiresAtMs);
}

/** The lease an event's data grants, written at `seq`: a session lease's end stays open until its session's is known. */
export function leaseOf(
  d: { readonly owner: string; readonly generation: number; readonly ttlMs: number; readonly expiresAt: string; readonly session?: string },
  seq: number,
  by: string | undefined,
): LockLease {
  const { owner, generation, ttlMs } = d;
  const untilMs = instantMs(d.expiresAt);
  const lease: LockLease =
    d.session === undefined
      ? { owner, generation, seq, ttlMs, expiresAtMs: untilMs }
      : { owner, generation, seq, ttlMs, expiresAtMs: OPEN_END, session: d.session, grantedUntilMs: untilMs };
  return by === undefined ? lease : { ...lease, by };
}

/** The wire shape of a lease (`lease` in docs/protocol.md's Locks section), as the contract types it. */
export type LeaseView = ContractLockLease;

/** The wire view of a lock's lease. */
export function leaseView(name: string, l: LockLease): LeaseView {
  const view = { name, owner: l.owner, generation: l.generation, etag: leaseEtag(l), expiresAt: leaseExpiresAt(l), ttlMs: l.ttlMs };
  return l.session === undefined ? view : { ...view, session: l.session };
}

/*
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

export type { LockWaiter } from "./waiter-queue.ts";

/** The queue of every lock nobody waits for: one, not one per lock. */
export const NO_WAITERS: WaiterQueue = WaiterQueue.EMPTY;

/** Does the lock's state wait on any session's end (its lease's or a waiter's)? */
export function refersToSessions(state: LockState): boolean {
  return state.lease?.session !== undefined || (state.waiters !== NO_WAITERS && state.waiters.sessionWaiters > 0);
}

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
  // Most locks have nobody waiting: nothing to advance, and the queue is not asked.
  if (waiters === NO_WAITERS) return subject;
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
  if (at.waiters === NO_WAITERS) return NO_VIEW;
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
