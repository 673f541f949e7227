/**
 * The session table handed to a lock decision that is expected not to read
 * it. A lock command that names no session, on a lock whose lease and
 * waiters hang on none, decides without any session's end, so it need not
 * wait for the table to catch up with the stream (a look at the stream per
 * request once any session exists). The lock's state can still turn out to
 * hang on a session at its turn (another instance's event, folded on an
 * append conflict): then the decision asks this table, which refuses, and
 * the command is carried out again after the table has caught up.
 */
import type { SessionLookup, SessionState } from "../session/index.ts";

/** Thrown by {@link UnreadSessions.get}: the decision needs the sessions caught up first. */
export class SessionsNeededError extends Error {
  constructor() {
    super("the lock's decision reads its sessions, which were not caught up with the stream");
    this.name = "SessionsNeededError";
  }
}

/** A {@link SessionLookup} that notes whether a decision asked it, and refuses to answer. */
export class UnreadSessions implements SessionLookup {
  /** Did a decision ask for a session? */
  asked = false;

  get(_id: string): SessionState | undefined {
    this.asked = true;
    throw new SessionsNeededError();
  }
}
