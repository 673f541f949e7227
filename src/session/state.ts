/**
 * The session projection: a pure fold of one session's history into its
 * owner, TTL and end. Whether a session is live is arithmetic on an instant
 * (`expiresAt`, or when it was closed), never a timer, as for a lock's lease.
 * Shared by the session actor, the session table locks read, and the tools.
 */
import type { HistoryEntry } from "../events/envelope.ts";
import { instantMs } from "../events/envelope.ts";
import { sessionEventSchemas } from "./events.ts";
import { eventIn } from "../events/kind-events.ts";
import type { Session } from "../contract/messages.ts";

/** One session's state; a session never opened has `opened: false`. */
export interface SessionState {
  readonly id: string;
  readonly opened: boolean;
  readonly owner: string;
  readonly ttlMs: number;
  /** When it ends unless kept alive (epoch ms), and as recorded. */
  readonly expiresAtMs: number;
  readonly expiresAt: string;
  /** When it was closed (epoch ms); null while not closed. */
  readonly closedAtMs: number | null;
  /** The principal whose request opened it (its `SessionOpened`'s `by`); absent when unknown. */
  readonly by?: string;
}

/** The state of a session with no history. */
export function initialSessionState(id: string): SessionState {
  return { id, opened: false, owner: "", ttlMs: 0, expiresAtMs: 0, expiresAt: "", closedAtMs: null };
}

/** The instant the session ends (or ended) if nothing else happens: closed, or its expiry; 0 when never opened. */
export function sessionEndMs(state: SessionState): number {
  return state.closedAtMs === null ? state.expiresAtMs : Math.min(state.closedAtMs, state.expiresAtMs);
}

/** Is the session live at `now` (opened, not closed, not expired)? */
export function sessionLiveAt(state: SessionState, now: number): boolean {
  return state.opened && sessionEndMs(state) > now;
}

/** The wire view of a session. */
export function sessionView(state: SessionState): Session {
  return { id: state.id, owner: state.owner, ttlMs: state.ttlMs, expiresAt: state.expiresAt };
}

/** Applies one history entry; messages that do not parse, and events of other kinds, change nothing. */
export function evolveSession(state: SessionState, entry: HistoryEntry): SessionState {
  const event = eventIn(sessionEventSchemas, entry);
  if (event === undefined) return state;
  switch (event.type) {
    case "SessionOpened": {
      const d = event.data;
      const opened = {
        ...state,
        opened: true,
        owner: d.owner,
        ttlMs: d.ttlMs,
        expiresAt: d.expiresAt,
        expiresAtMs: instantMs(d.expiresAt),
      };
      return event.by === undefined ? opened : { ...opened, by: event.by };
    }
    case "SessionKeptAlive":
      return { ...state, expiresAt: event.data.expiresAt, expiresAtMs: instantMs(event.data.expiresAt) };
    case "SessionClosed":
      return { ...state, closedAtMs: state.closedAtMs ?? instantMs(event.at) };
  }
}

/** Sessions by id as a lock's decision reads them (the session table's, caught up with the stream). */
export interface SessionLookup {
  /** The session's state; undefined when it was never opened. */
  get(id: string): SessionState | undefined;
  /**
   * The sessions closed, in the order their closes were folded: a close is
   * the one change that brings a session's end forward, so a reader that
   * keeps sessions by their end (src/lock/session-watch.ts) learns of it
   * here. Absent: the reader reads every session it needs each time.
   */
  readonly closes?: CloseLog;
}

/** An append-only log of closed session ids, read from a mark. */
export interface CloseLog {
  /** The mark of the log's end: what {@link CloseLog.since} reads on from. */
  mark(): number;
  /** The ids closed since `mark`; undefined when the log no longer reaches back that far (the reader reads every session again). */
  since(mark: number): readonly string[] | undefined;
}
