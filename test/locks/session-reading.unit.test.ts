/**
 * A lock decision reading its session waiters through the buffer's watch of
 * their sessions (src/lock/session-watch.ts: the session table's close log
 * at hand) decides exactly as one that reads every waiter's session
 * (src/lock/session-waiters.ts, a lookup with no close log): over random
 * runs of opens, keepalives, closes, joins under sessions and without,
 * handovers, reads and clock moves, the same decision (the same
 * `sessionEnds`, in the same order) and the same queue read at each instant;
 * and a fold applying the recorded ends in place (the queue its buffer's
 * latest) reaches the state one applying them on a copy does.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeEvent, type EventEnvelope } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import type { LockCommand, LockSettings } from "../../src/lock/commands.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import { resolveSessions } from "../../src/lock/session-waiters.ts";
import { leaseEtag, persistedLockState, queueAt, type LockState } from "../../src/lock/state.ts";
import { WaiterQueue } from "../../src/lock/waiter-queue.ts";
import { SessionCloseLog } from "../../src/session/close-log.ts";
import type { SessionLookup, SessionState } from "../../src/session/state.ts";
import { T0 } from "../support/lock-given.ts";

const SETTINGS: LockSettings = { lockTtlMs: 200, maxTtlMs: 1000, claimWindowMs: 20, maxWaiters: 200 };
const logic = lockLogic(SETTINGS);
const SESSIONS = 6;

type Step =
  | { readonly op: "open" | "keepalive" | "close"; readonly s: number; readonly ttl: number }
  | { readonly op: "tick"; readonly ms: number }
  | { readonly op: "join"; readonly s: number; readonly count: number; readonly waitMs: number; readonly rid: number }
  | { readonly op: "acquire" | "get" | "release" | "claim" };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constantFrom("open", "keepalive", "close"),
      s: fc.nat(SESSIONS - 1),
      ttl: fc.integer({ min: 5, max: 300 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("tick"), ms: fc.integer({ min: 1, max: 40 }) }) },
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant("join"),
      // -1: a join without a session.
      s: fc.integer({ min: -1, max: SESSIONS - 1 }),
      // Runs of joins, so that queues pass the length read through indexes.
      count: fc.integer({ min: 1, max: 40 }),
      waitMs: fc.integer({ min: 1, max: 600 }),
      rid: fc.nat(3),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom("acquire", "get", "release", "claim") }) },
);

/** Sessions kept as the session table keeps them, read by two lookups: one with the log of closes, one without. */
class Sessions {
  readonly states = new Map<string, SessionState>();
  readonly closes = new SessionCloseLog(8);
  readonly walked: SessionLookup = { get: (id) => this.states.get(id) };
  readonly watched: SessionLookup = { get: (id) => this.states.get(id), closes: this.closes };

  apply(step: Extract<Step, { s: number; ttl: number }>, now: number): void {
    const id = `s${step.s}`;
    const state = this.states.get(id);
    const live = state !== undefined && state.closedAtMs === null && state.expiresAtMs > now;
    if (step.op === "open" && state === undefined) {
      const expiresAtMs = now + step.ttl;
      this.states.set(id, { id, opened: true, owner: `o${step.s}`, ttlMs: step.ttl, expiresAtMs, expiresAt: "", closedAtMs: null });
    } else if (step.op === "keepalive" && live) {
      this.states.set(id, { ...state, expiresAtMs: now + state.ttlMs });
    } else if (step.op === "close" && live) {
      this.states.set(id, { ...state, closedAtMs: now });
      this.closes.closed(id);
    }
  }
}

/** The queue as a decision reads it at `now`, in plain values. */
function readingOf(state: LockState, sessions: SessionLookup, now: number) {
  const read = resolveSessions(state, sessions, now);
  const view = queueAt(read.state, now);
  return {
    ended: JSON.stringify(read.ended),
    lease: read.state.lease,
    head: view.head,
    headMayClaim: view.headMayClaim,
    headLeavesAtMs: view.head === null ? null : view.headLeavesAtMs,
    liveCount: view.liveCount,
    live: view.live,
    waiting: view.waiting.toArray(),
  };
}

function run(steps: readonly Step[]): void {
  const sessions = new Sessions();
  let state = logic.initialState("l");
  let reference = state;
  let now = T0;
  let seq = 0;
  let n = 0;
  const decide = (command: LockCommand) => {
    const walked = logic.decide(state, { ...command, sessions: sessions.walked }, now);
    const watched = logic.decide(state, { ...command, sessions: sessions.watched }, now);
    expect(JSON.stringify(watched)).toBe(JSON.stringify(walked));
    if (watched.outcome !== "append") return;
    const envelope = { type: watched.type, v: 1, at: new Date(now).toISOString(), kind: "lock", id: "l", data: watched.data };
    const requestId = "requestId" in command ? command.requestId : undefined;
    const entry = decodeEvent(encodeEvent({ ...envelope, ...(requestId === undefined ? {} : { requestId }) } as EventEnvelope), ++seq);
    state = logic.evolve(state, entry);
    // The same entry folded on a queue that is no buffer's latest: the recorded ends applied on a copy, not in place.
    reference = logic.evolve({ ...reference, waiters: WaiterQueue.from(reference.waiters, true) }, entry);
    expect(persistedLockState(state)).toEqual(persistedLockState(reference));
    // The queue's count by its index (waiters whose end was recorded take their new end), back and forth in time, as a walk counts.
    const recorded = state.waiters.toArray();
    for (const t of [now + 150, now - 150, now + 30, now]) {
      expect(state.waiters.waitingAt(t)).toBe(recorded.filter((w) => w.untilMs > t).length);
    }
  };
  // Every session open and the lock held to start with, so that joins queue under live sessions.
  for (let s = 0; s < SESSIONS; s++) sessions.apply({ op: "open", s, ttl: 100 + 50 * s }, now);
  decide({ op: "acquire", owner: "first", ttlMs: 300 });
  for (const step of steps) {
    switch (step.op) {
      case "open":
      case "keepalive":
      case "close":
        sessions.apply(step, now);
        break;
      case "tick":
        now += step.ms;
        break;
      case "join":
        for (let i = 0; i < step.count; i++) {
          const session = step.s < 0 ? {} : { session: `s${step.s}` };
          const owner = step.s < 0 ? `p${n++}` : `o${step.s}`;
          decide({ op: "acquire", owner, waitMs: step.waitMs, ...(step.rid === 0 ? {} : { requestId: `r${step.rid}` }), ...session });
          now += i % 3;
        }
        break;
      case "acquire":
        decide({ op: "acquire", owner: `p${n++}`, ttlMs: 300 });
        break;
      case "get":
        decide({ op: "get" });
        break;
      case "release":
        if (state.lease !== null) decide({ op: "release", etag: leaseEtag(state.lease) });
        break;
      case "claim": {
        const head = queueAt(resolveSessions(state, sessions.walked, now).state, now).head;
        if (head !== null) {
          const claim = { op: "claim", owner: head.owner, place: head.seq, giveUpAt: head.untilMs, waitingSince: head.joinedAtMs } as const;
          decide(head.session === undefined ? claim : { ...claim, session: head.session });
        }
        break;
      }
    }
    expect(readingOf(state, sessions.watched, now)).toEqual(readingOf(state, sessions.walked, now));
  }
}

describe("a lock decision reading its session waiters through the watch of their sessions", () => {
  it("decides and reads the queue as one that reads every waiter's session", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 120 }), (steps) => run(steps)),
      { numRuns: 300 },
    );
  }, 120_000);
});
