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
import { NO_WAITERS, OPEN_END, type LockState } from "./state.ts";
import type { LockWaiter } from "./state.ts";
import { WaiterQueue } from "./waiter-queue.ts";
import { sessionEndMs, type SessionLookup } from "../session/index.ts";
import { refersToSessions } from "./state.ts";

/** The sessions whose ends a lock event recorded, applied to the state before the event is folded. */
export function applySessionEnds(state: LockState, ends: Readonly<Record<string, string>> | undefined): LockState {
  if (ends === undefined) return state;
  return withSessionEnds(state, (id) => (Object.hasOwn(ends, id) ? instantMs(ends[id]!) : undefined));
}

/** A lock's state with its sessions' ends read from `sessions`, and the ends that had passed by `now` (to record). */
export function resolveSessions(
  state: LockState,
  sessions: SessionLookup,
  now: number,
): { readonly state: LockState; readonly ended: Readonly<Record<string, string>> | undefined } {
  if (!refersToSessions(state)) return { state, ended: undefined };
  let ended: Record<string, string> | undefined;
  const read = state.waiters.sessionWaiters === 0 ? undefined : state.waiters.readWithSessions(sessions, now);
  if (read !== undefined) {
    // The queue read through the buffer's watch of its sessions (no walk); the lease read as below. The lease's end first, then the
    // waiters' in the order of their places, as the walk records them.
    const lease = withSessionEnds({ ...state, waiters: NO_WAITERS }, (id, fallback) => {
      const session = sessions.get(id);
      const end = session === undefined ? fallback : sessionEndMs(session);
      if (end <= now) ended = { [id]: new Date(end).toISOString() };
      return end;
    }).lease;
    for (const [id, end] of read.ended)
      if (ended === undefined || !Object.hasOwn(ended, id)) (ended ??= {})[id] = new Date(end).toISOString();
    return { state: { ...state, lease, waiters: read.queue }, ended };
  }
  const resolved = withSessionEnds(
    state,
    (id, fallback) => {
      const session = sessions.get(id);
      const end = session === undefined ? fallback : sessionEndMs(session);
      if (end <= now) (ended ??= {})[id] = new Date(end).toISOString();
      return end;
    },
    true,
  );
  return { state: resolved, ended };
}

/**
 * The state with each session's end (`endOf`, undefined when unknown) applied:
 * a session lease ends then, and a session waiter's wait ends then at the
 * latest. `live` marks a reading for one decision (the lease takes the
 * session's TTL, and waiters keep their session); otherwise the ends are
 * final and the state no longer refers to those sessions. A queue with no
 * session waiter (counted without a walk) is left as it is; one with some is
 * rebuilt, a walk of the queue.
 */
function withSessionEnds(state: LockState, endOf: (id: string, fallback: number) => number | undefined, live = false): LockState {
  let { lease } = state;
  if (lease?.session !== undefined && lease.expiresAtMs === OPEN_END) {
    const end = endOf(lease.session, lease.grantedUntilMs ?? OPEN_END);
    if (end !== undefined) lease = { ...lease, expiresAtMs: end };
  }
  let changed = lease !== state.lease;
  if (state.waiters.sessionWaiters === 0) return changed ? { ...state, lease } : state;
  const waiters = state.waiters.map((w): LockWaiter => {
    if (w.session === undefined) return w;
    const end = endOf(w.session, w.untilMs);
    if (end === undefined) return w;
    changed = true;
    const untilMs = Math.min(w.untilMs, end);
    const bounded = { ...w, untilMs };
    if (live) return bounded;
    const { session: _ended, ...rest } = bounded;
    return rest;
  });
  // A reading for one decision is let go after it: its queue keeps no indexes.
  return changed ? { ...state, lease, waiters: WaiterQueue.from(waiters, live) } : state;
}
