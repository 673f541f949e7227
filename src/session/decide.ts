/**
 * The session decider: open once, keep alive and close while live; an ended
 * session (closed, or its `expiresAt` passed) never comes back, and answers
 * NO_SESSION to both.
 */
import { type Decision, recorder, reject, replyOnly } from "../actors/kind-logic.ts";
import type { SessionEvent } from "./events.ts";
import { sessionLiveAt, sessionView, type SessionState } from "./state.ts";
import type { OpenSession, SessionCommand, SessionSettings } from "./commands.ts";

const record = recorder<SessionEvent>();

/** Decides one session command at `now`. */
export function decideSession(
  state: SessionState,
  command: SessionCommand,
  now: number,
  settings: SessionSettings,
): Decision<SessionEvent> {
  switch (command.op) {
    case "open":
      return decideOpen(state, command, now, settings);
    case "keepalive":
      if (!sessionLiveAt(state, now)) return noSession(state);
      return record("SessionKeptAlive", { expiresAt: new Date(now + state.ttlMs).toISOString() });
    case "close":
      return sessionLiveAt(state, now) ? record("SessionClosed", {}) : noSession(state);
    case "get":
      return replyOnly(sessionLiveAt(state, now) ? { session: sessionView(state) } : { session: null });
  }
}

/** A session id is chosen per request: an opened one is this request's, retried (it answers the session as opened). */
function decideOpen(state: SessionState, command: OpenSession, now: number, settings: SessionSettings): Decision<SessionEvent> {
  const ttlMs = command.ttlMs ?? settings.lockTtlMs;
  if (ttlMs > settings.maxTtlMs) {
    return reject("TTL_EXCEEDS_MAX", `ttlMs ${ttlMs} exceeds the server's maximum ${settings.maxTtlMs}`, {
      ttlMs,
      maxTtlMs: settings.maxTtlMs,
    });
  }
  if (state.opened) return replyOnly({ session: sessionView(state) });
  return record("SessionOpened", { owner: command.owner, ttlMs, expiresAt: new Date(now + ttlMs).toISOString() });
}

/** NO_SESSION: ended or never opened. */
export function noSession(state: SessionState): Decision<never> {
  return reject("NO_SESSION", `session ${state.id} has ended or never existed`);
}
