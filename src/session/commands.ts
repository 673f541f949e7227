/** The commands a session actor takes (docs/protocol.md, "Sessions"), already validated. */

/** Open the session (its id was chosen by the service before the turn). */
export interface OpenSession {
  readonly op: "open";
  readonly owner: string;
  readonly ttlMs?: number | undefined;
}
/** Extend a live session by its own TTL from now. */
export interface KeepSessionAlive {
  readonly op: "keepalive";
}
/** End a live session now. */
export interface CloseSession {
  readonly op: "close";
}
/** Read the live session. */
export interface GetSession {
  readonly op: "get";
}

/** Any session command. */
export type SessionCommand = OpenSession | KeepSessionAlive | CloseSession | GetSession;

/** Server-side session settings (a session's TTL follows the lock TTL rules). */
export interface SessionSettings {
  /** TTL when `session.open` names none. */
  readonly lockTtlMs: number;
  /** Ceiling on a session's TTL. */
  readonly maxTtlMs: number;
}
