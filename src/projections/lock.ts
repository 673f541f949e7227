/**
 * The lock projection: a pure fold of one lock's history into its state.
 * Shared by the lock actor (hydration), the read endpoints and the tools, so
 * none of them can disagree about what a history means.
 */
import type { HistoryEntry } from "../events/index.ts";
import { isLockEvent, isUnparsable } from "../events/index.ts";

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
}

/** The state of a lock with no history. */
export function initialLockState(name: string): LockState {
  return { name, lease: null, generation: 0, corrupt: null };
}

/**
 * The etag of the lease written at stream sequence `seq`: opaque to clients,
 * unique per write, and the same on every replay.
 */
export function etagOf(seq: number): string {
  return seq.toString(36).padStart(8, "0");
}

/** Applies one history entry. Entries that break the lock's invariants mark it corrupt. */
export function evolveLock(state: LockState, entry: HistoryEntry): LockState {
  if (isUnparsable(entry)) {
    return { ...state, corrupt: `event at sequence ${entry.seq} does not parse (${entry.reason})` };
  }
  const event = entry.event;
  const seq = entry.seq;
  if (!isLockEvent(event)) return { ...state, corrupt: `event at sequence ${seq} has a type no lock writes (${event.type})` };
  switch (event.type) {
    case "LockAcquired": {
      const d = event.data;
      const corrupt =
        d.generation !== state.generation + 1
          ? `LockAcquired at sequence ${seq} has generation ${d.generation}, expected ${state.generation + 1}`
          : state.corrupt;
      return {
        ...state,
        corrupt,
        generation: Math.max(state.generation, d.generation),
        lease: lease(d.owner, d.generation, seq, d.ttlMs, d.expiresAt),
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
      return { ...state, corrupt, lease: null };
    }
    case "LockReset":
      // A reset is the operator's word: nothing before it counts any more.
      return { ...state, corrupt: null, lease: null, generation: Math.max(state.generation, event.data.generation) };
  }
}

function lease(owner: string, generation: number, seq: number, ttlMs: number, expiresAt: string): LockLease {
  return { owner, generation, etag: etagOf(seq), ttlMs, expiresAt, expiresAtMs: Date.parse(expiresAt) };
}

/** The wire shape of a lease (`lease` in docs/protocol.md's Locks section). */
export interface LeaseView {
  readonly name: string;
  readonly owner: string;
  readonly generation: number;
  readonly etag: string;
  readonly expiresAt: string;
  readonly ttlMs: number;
}

/** The wire view of a lock's lease. */
export function leaseView(name: string, l: LockLease): LeaseView {
  return { name, owner: l.owner, generation: l.generation, etag: l.etag, expiresAt: l.expiresAt, ttlMs: l.ttlMs };
}
