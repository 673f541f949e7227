/**
 * A lock's session leases and session waiters (docs/locks.md, "Session
 * leases") read against their sessions. A lock's own history does not know
 * when its sessions end (keepalives and closes are the sessions' events), so
 * its fold keeps a session lease held ({@link OPEN_END}) and a session waiter
 * bounded by its own `until` until a lock event records the session's end
 * (`sessionEnds`). A decision first reads the sessions' real ends from the
 * session table, and records those that have passed, so every later fold of
 * the lock's history reaches the same state.
 */
import { instantMs } from "../events/envelope.ts";
import { OPEN_END, type LockLease, type LockState } from "./state.ts";
import type { LockWaiter } from "./state.ts";
import { boundedBySession, WaiterQueue } from "./waiter-queue.ts";
import { sessionEndMs, type SessionLookup } from "../session/index.ts";
import { refersToSessions } from "./state.ts";

/** The sessions whose ends a lock event recorded, applied to the state before the event is folded: final, so the state no longer refers to them. */
export function applySessionEnds(state: LockState, ends: Readonly<Record<string, string>> | undefined): LockState {
  if (ends === undefined) return state;
  const endOf = new Map(Object.entries(ends).map(([id, at]) => [id, instantMs(at)] as const));
  const lease = leaseWithEnd(state.lease, (id) => endOf.get(id));
  const waiters = state.waiters.withSessionsEnded(endOf);
  return lease === state.lease && waiters === state.waiters ? state : { ...state, lease, waiters };
}

/**
 * A lock's state with its sessions' ends read from `sessions`, for one
 * decision (the lease takes its session's end, each session waiter waits
 * until its session's end at the latest and keeps its session), and the ends
 * that had passed by `now` (to record): the lease's first, then the
 * waiters' in the order of their places.
 */
export function resolveSessions(
  state: LockState,
  sessions: SessionLookup,
  now: number,
): { readonly state: LockState; readonly ended: Readonly<Record<string, string>> | undefined } {
  if (!refersToSessions(state)) return { state, ended: undefined };
  let ended: Record<string, string> | undefined;
  const endOf = (id: string, fallback: number): number => {
    const session = sessions.get(id);
    const end = session === undefined ? fallback : sessionEndMs(session);
    if (end <= now) (ended ??= {})[id] = new Date(end).toISOString();
    return end;
  };
  const lease = leaseWithEnd(state.lease, endOf);
  if (state.waiters.sessionWaiters === 0) return { state: lease === state.lease ? state : { ...state, lease }, ended };
  // Through the buffer's watch of its sessions: only those that ended, were closed or are new are read.
  const read = state.waiters.readWithSessions(sessions, now);
  if (read !== undefined) {
    for (const [id, end] of read.ended)
      if (ended === undefined || !Object.hasOwn(ended, id)) (ended ??= {})[id] = new Date(end).toISOString();
    return { state: { ...state, lease, waiters: read.queue }, ended };
  }
  // Else every session waiter read, a walk; the queue read once keeps no indexes.
  const waiters = state.waiters.map((w): LockWaiter => (w.session === undefined ? w : boundedBySession(w, endOf(w.session, w.untilMs))));
  return { state: { ...state, lease, waiters: WaiterQueue.from(waiters, true) }, ended };
}

/** A session lease whose end the lock's history does not know, ended at its session's end (`endOf`, undefined when unknown). */
function leaseWithEnd(lease: LockLease | null, endOf: (id: string, fallback: number) => number | undefined): LockLease | null {
  if (lease?.session === undefined || lease.expiresAtMs !== OPEN_END) return lease;
  const end = endOf(lease.session, lease.grantedUntilMs ?? OPEN_END);
  return end === undefined ? lease : { ...lease, expiresAtMs: end };
}
