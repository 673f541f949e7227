/**
 * The lock projection: a pure fold of one lock's history into its state.
 * Shared by the lock actor (hydration), the read endpoints and the tools, so
 * none of them can disagree about what a history means.
 */
import type { HistoryEntry } from "../events/index.ts";
import { isLockEvent, isUnparsable, instantMs } from "../events/index.ts";
import { advanceQueue, type LockWaiter } from "./lock-queue.ts";
import type { LockLease as ContractLockLease } from "../contract/messages.ts";

/** The lease a lock currently records (expired or not: expiry is a function of now). */
export interface LockLease {
  readonly owner: string;
  readonly generation: number;
  readonly etag: string;
  readonly ttlMs: number;
  readonly expiresAt: string;
  readonly expiresAtMs: number;
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
  /** The wait queue as of the last event (src/projections/lock-queue.ts reads it at any instant). */
  readonly waiters: readonly LockWaiter[];
  /** When `waiters[0]` became head. */
  readonly headSinceMs: number;
}

/** The state of a lock with no history. */
export function initialLockState(name: string): LockState {
  return { name, lease: null, generation: 0, corrupt: null, freedAtMs: 0, waiters: [], headSinceMs: 0 };
}

/**
 * The etag of the lease written at stream sequence `seq`: opaque to clients,
 * unique per write, and the same on every replay.
 */
export function etagOf(seq: number): string {
  return seq.toString(36).padStart(8, "0");
}

/**
 * Applies one history entry. Entries that break the lock's invariants mark it
 * corrupt. The queue is first brought to the event's instant (waiters whose
 * turn passed leave it), then the event applies.
 */
export function evolveLock(before: LockState, entry: HistoryEntry): LockState {
  if (isUnparsable(entry)) {
    return { ...before, corrupt: `event at sequence ${entry.seq} does not parse (${entry.reason})` };
  }
  const event = entry.event;
  const seq = entry.seq;
  if (!isLockEvent(event)) return { ...before, corrupt: `event at sequence ${seq} has a type no lock writes (${event.type})` };
  const atMs = instantMs(event.at);
  const state = advanceQueue(before, atMs);
  switch (event.type) {
    case "LockWaiterQueued": {
      const d = event.data;
      const waiter: LockWaiter = {
        seq,
        owner: d.owner,
        requestId: event.requestId ?? null,
        untilMs: instantMs(d.until),
        until: d.until,
        claimWindowMs: d.claimWindowMs,
        joinedAtMs: atMs,
      };
      return { ...state, waiters: [...state.waiters, waiter], headSinceMs: state.waiters.length === 0 ? atMs : state.headSinceMs };
    }
    case "LockAcquired": {
      const d = event.data;
      // A grant to a waiter takes its place out of the queue; the next one becomes head now.
      const place = d.waiterSeq === undefined ? -1 : state.waiters.findIndex((w) => w.seq === d.waiterSeq);
      const waiters = place < 0 ? state.waiters : state.waiters.filter((_, i) => i !== place);
      const headSinceMs = place === 0 ? atMs : state.headSinceMs;
      const corrupt =
        d.generation !== state.generation + 1
          ? `LockAcquired at sequence ${seq} has generation ${d.generation}, expected ${state.generation + 1}`
          : state.corrupt;
      return {
        ...state,
        corrupt,
        generation: Math.max(state.generation, d.generation),
        lease: lease(d.owner, d.generation, seq, d.ttlMs, d.expiresAt),
        waiters,
        headSinceMs,
      };
    }
    case "LockRenewed": {
      const d = event.data;
      const held = state.lease;
      const corrupt =
        held === null || held.generation !== d.generation || held.owner !== d.owner
          ? `LockRenewed at sequence ${seq} does not match the current lease`
          : state.corrupt;
      return { ...state, corrupt, lease: lease(d.owner, d.generation, seq, d.ttlMs, d.expiresAt) };
    }
    case "LockReleased": {
      const held = state.lease;
      const corrupt =
        held === null || held.generation !== event.data.generation
          ? `LockReleased at sequence ${seq} does not match the current lease`
          : state.corrupt;
      return { ...state, corrupt, lease: null, freedAtMs: freedAt(state, atMs) };
    }
    case "LockReset":
      // A reset is the operator's word: nothing before it counts any more (waiters keep their places).
      return {
        ...state,
        corrupt: null,
        lease: null,
        freedAtMs: freedAt(state, atMs),
        generation: Math.max(state.generation, event.data.generation),
      };
  }
}

/** When the lock became free, given it is freed at `atMs`: an expired lease freed it at its expiry already. */
function freedAt(state: LockState, atMs: number): number {
  return state.lease === null ? state.freedAtMs : Math.min(atMs, state.lease.expiresAtMs);
}

function lease(owner: string, generation: number, seq: number, ttlMs: number, expiresAt: string): LockLease {
  return { owner, generation, etag: etagOf(seq), ttlMs, expiresAt, expiresAtMs: instantMs(expiresAt) };
}

/** The wire shape of a lease (`lease` in docs/protocol.md's Locks section), as the contract types it. */
export type LeaseView = ContractLockLease;

/** The wire view of a lock's lease. */
export function leaseView(name: string, l: LockLease): LeaseView {
  return { name, owner: l.owner, generation: l.generation, etag: l.etag, expiresAt: l.expiresAt, ttlMs: l.ttlMs };
}
