/**
 * The session decider and the lock's decisions under sessions as pure
 * functions: open, keepalive and close while live, the end being final,
 * and a lock reading its session's end from the session table it is handed
 * (and recording the end it saw pass, so that its fold agrees).
 */
import { describe, expect, it } from "vitest";
import { decideSession } from "../../src/session/decide.ts";
import { type SessionCommand, type SessionSettings } from "../../src/session/commands.ts";
import { evolveSession, initialSessionState, type SessionLookup, type SessionState } from "../../src/session/state.ts";
import { thenOf } from "../support/decider-spec.ts";
import { specEvent } from "../support/event-builders.ts";
import { givenLock, iso, lockEvent, T0 } from "../support/lock-given.ts";
import type { HistoryEntry } from "../../src/events/envelope.ts";
import { leaseEtag, OPEN_END } from "../../src/lock/state.ts";

const S = 1000;
const SETTINGS: SessionSettings = { lockTtlMs: 10 * S, maxTtlMs: 30 * S };
const ID = "s1";

function session(history: readonly [type: string, data: unknown, at: number][]): SessionState {
  return history.reduce<SessionState>(
    (state, [type, data, at], i) => evolveSession(state, specEvent(i + 1, "session", ID, type, data, at)),
    initialSessionState(ID),
  );
}
/** `SessionOpened` by w at T0 for 10 s. */
const OPENED: [string, unknown, number] = ["SessionOpened", { owner: "w", ttlMs: 10 * S, expiresAt: iso(T0 + 10 * S) }, T0];
const opened = () => session([OPENED]);
/** Opened at T0 and closed at `at`. */
const closedAt = (at: number) => session([OPENED, ["SessionClosed", {}, at]]);
const decide = (state: SessionState, command: SessionCommand, now: number) => thenOf(decideSession(state, command, now, SETTINGS));

describe("session decider", () => {
  it("opens with the default TTL, refuses one above maxTtlMs, and answers a retried open with the session", () => {
    decide(initialSessionState(ID), { op: "open", owner: "w" }, T0).thenRecords("SessionOpened", {
      owner: "w",
      ttlMs: 10 * S,
      expiresAt: iso(T0 + 10 * S),
    });
    decide(initialSessionState(ID), { op: "open", owner: "w", ttlMs: 31 * S }, T0).thenRejects("TTL_EXCEEDS_MAX", {
      ttlMs: 31 * S,
      maxTtlMs: 30 * S,
    });
    decide(opened(), { op: "open", owner: "w" }, T0 + 5).thenReplies({
      session: { id: ID, owner: "w", ttlMs: 10 * S, expiresAt: iso(T0 + 10 * S) },
    });
  });

  it("keeps a live session alive by its own TTL from now, up to the last millisecond before expiresAt", () => {
    decide(opened(), { op: "keepalive" }, T0 + 10 * S - 1).thenRecords("SessionKeptAlive", { expiresAt: iso(T0 + 20 * S - 1) });
    decide(opened(), { op: "keepalive" }, T0 + 10 * S).thenRejects("NO_SESSION");
  });

  it("answers NO_SESSION to keepalive and close of an unknown, expired or closed session, and get {session: null}", () => {
    const closed = closedAt(T0 + S);
    for (const state of [initialSessionState(ID), closed]) {
      decide(state, { op: "keepalive" }, T0 + 2 * S).thenRejects("NO_SESSION");
      decide(state, { op: "close" }, T0 + 2 * S).thenRejects("NO_SESSION");
      decide(state, { op: "get" }, T0 + 2 * S).thenReplies({ session: null });
    }
    decide(opened(), { op: "close" }, T0 + 10 * S).thenRejects("NO_SESSION");
    decide(opened(), { op: "close" }, T0 + S).thenRecords("SessionClosed", {});
  });
});

describe("a lock under a session", () => {
  const table = (state: SessionState): SessionLookup => ({ get: (id) => (id === state.id && state.opened ? state : undefined) });
  /** What a grant to w under the session opened at T0 records. */
  const grantUnderSession = { owner: "w", generation: 1, ttlMs: 10 * S, expiresAt: iso(T0 + 10 * S), previousOwner: "", session: ID };
  const underSession: HistoryEntry = lockEvent(1, "LockAcquired", grantUnderSession);

  it("is granted with the session's TTL and expiry; another owner is BAD_REQUEST, an ended session NO_SESSION", () => {
    const sessions = table(opened());
    givenLock([])
      .when({ op: "acquire", owner: "w", session: ID, sessions }, T0 + S)
      .thenRecords("LockAcquired", grantUnderSession);
    givenLock([])
      .when({ op: "acquire", owner: "v", session: ID, sessions }, T0 + S)
      .thenRejects("BAD_REQUEST");
    givenLock([])
      .when({ op: "acquire", owner: "w", session: ID, sessions }, T0 + 10 * S)
      .thenRejects("NO_SESSION");
    givenLock([]).when({ op: "acquire", owner: "w", session: "other", sessions }, T0).thenRejects("NO_SESSION");
  });

  it("is held, in the fold, until an event records its session's end; a decision reads the end from the table", () => {
    const given = givenLock([underSession]);
    expect(given.state.lease).toMatchObject({ session: ID, expiresAtMs: OPEN_END });
    const kept = session([OPENED, ["SessionKeptAlive", { expiresAt: iso(T0 + 15 * S) }, T0 + 5 * S]]);
    given.when({ op: "get", sessions: table(kept) }, T0 + 12 * S).thenReplies({
      lease: {
        name: expect.any(String) as string,
        owner: "w",
        generation: 1,
        etag: expect.any(String) as string,
        expiresAt: iso(T0 + 15 * S),
        ttlMs: 10 * S,
        session: ID,
      },
      waiters: 0,
    });
    given.when({ op: "get", sessions: table(kept) }, T0 + 15 * S).thenReplies({ lease: null, waiters: 0 });
  });

  it("is free from its session's close, and the next acquire records that end", () => {
    const closed = closedAt(T0 + 2 * S);
    givenLock([underSession])
      .when({ op: "acquire", owner: "v", ttlMs: S, sessions: table(closed) }, T0 + 3 * S)
      .thenRecords("LockAcquired", {
        owner: "v",
        generation: 2,
        ttlMs: S,
        expiresAt: iso(T0 + 4 * S),
        previousOwner: "w",
        sessionEnds: { [ID]: iso(T0 + 2 * S) },
      });
  });

  it("refuses lock.renew of a session lease with BAD_REQUEST", () => {
    const given = givenLock([underSession]);
    given
      .when({ op: "renew", owner: "w", etag: leaseEtag(given.state.lease!), sessions: table(opened()) }, T0 + S)
      .thenRejects("BAD_REQUEST");
  });
});
