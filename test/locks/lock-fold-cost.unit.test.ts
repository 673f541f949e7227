/**
 * What a lock's fold and decisions cost per event with a long queue, counted
 * in the queue's own steps (src/lock/waiter-index.ts, `queueWork`:
 * index nodes visited, heap moves by depth, waiters read or copied), not
 * timed: with 10,000 waiters recorded, a join (its decision under
 * --max-waiters, with a requestId, and its fold), a renewal, a handover to
 * the head (release, the head's claim, the grant's fold) and a `lock.get`
 * take at most the log n growth of the steps they take with 100: a walk of
 * the queue would take 100 times as many; and so do they when the waiters
 * wait under sessions of their own, kept alive, closed and decided on with
 * the sessions at hand (src/lock/session-watch.ts).
 */
import { describe, expect, it } from "vitest";
import { encodeEvent, type EventEnvelope, type HistoryEntry } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import type { LockCommand, LockSettings } from "../../src/lock/commands.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import { leaseEtag, type LockState } from "../../src/lock/state.ts";
import type { SessionLookup, SessionState } from "../../src/session/state.ts";
import { SessionCloseLog } from "../../src/session/close-log.ts";
import { queueWork } from "../../src/lock/waiter-index.ts";
import { T0 } from "../support/lock-given.ts";

const SETTINGS: LockSettings = { lockTtlMs: 30_000, maxTtlMs: 60_000, claimWindowMs: 5000, maxWaiters: 20_000 };
const logic = lockLogic(SETTINGS);

/** A lock and its stream: commands are decided at `now` and what they append is folded, as the runtime does. */
class Lock {
  state: LockState = logic.initialState("l");
  seq = 0;
  now = T0;

  run(command: LockCommand) {
    const decision = logic.decide(this.state, command, this.now);
    const requestId = "requestId" in command ? command.requestId : undefined;
    if (decision.outcome === "append") this.fold(decision.type, decision.data, requestId);
    return decision;
  }

  fold(type: string, data: unknown, requestId: string | undefined): void {
    const at = new Date(this.now).toISOString();
    const envelope = { type, v: 1, at, kind: "lock", id: "l", data, ...(requestId === undefined ? {} : { requestId }) };
    const entry: HistoryEntry = decodeEvent(encodeEvent(envelope as unknown as EventEnvelope), ++this.seq);
    this.state = logic.evolve(this.state, entry);
  }
}

/** Steps the queue takes for `work`. */
function stepsOf(work: () => void): number {
  const before = queueWork.steps;
  work();
  return queueWork.steps - before;
}

/** Steps per event with `n` waiters queued behind a holder (a fifth of them given up, still recorded behind the head). */
function costsWith(n: number) {
  const lock = new Lock();
  expect(lock.run({ op: "acquire", owner: "holder", ttlMs: 60_000 }).outcome).toBe("append");
  const joinAll = stepsOf(() => {
    for (let i = 0; i < n; i++) {
      lock.now++;
      const waitMs = i % 5 === 1 ? 1000 : 600_000;
      expect(lock.run({ op: "acquire", owner: `w${i}`, waitMs, requestId: `r${i}` }).outcome).toBe("append");
    }
  });
  lock.now += 2000;
  // The first long read builds the queue's indexes (once per buffer, O(n)); what follows is per event.
  lock.run({ op: "get" });
  const join = stepsOf(() => lock.run({ op: "acquire", owner: "late", waitMs: 600_000, requestId: "late" }));
  const retry = stepsOf(() => {
    // A retry finds its place by requestId and appends nothing.
    expect(lock.run({ op: "acquire", owner: "late", waitMs: 600_000, requestId: "late" }).outcome).toBe("reply");
  });
  const get = stepsOf(() => {
    const r = lock.run({ op: "get" });
    expect(r).toMatchObject({ outcome: "reply", reply: { waiters: n - n / 5 + 1 } });
  });
  const renewal = stepsOf(() => lock.run({ op: "renew", owner: "holder", etag: leaseEtag(lock.state.lease!) }));
  lock.now += 10;
  const handover = stepsOf(() => {
    lock.run({ op: "release", etag: leaseEtag(lock.state.lease!) });
    const claimed = lock.run({ op: "claim", owner: "w0", place: 2, giveUpAt: lock.now + 600_000, waitingSince: T0 });
    expect(claimed).toMatchObject({ outcome: "append", type: "LockAcquired" });
  });
  expect(lock.state.lease?.owner).toBe("w0");
  // The next head is w2 (w1's wait ended behind the head): its turn comes without a walk past the ones that gave up.
  lock.now += 10;
  const next = stepsOf(() => {
    lock.run({ op: "release", etag: leaseEtag(lock.state.lease!) });
    expect(lock.run({ op: "claim", owner: "w2", place: 4, giveUpAt: lock.now + 600_000, waitingSince: T0 })).toMatchObject({
      outcome: "append",
    });
  });
  return { perJoin: joinAll / n, join, retry, get, renewal, handover, next };
}

/** Every event's steps with 10,000 waiters at most the log n growth of its steps with 100, and below `most`. */
function expectLogGrowth(costs: (n: number) => Record<string, number>, most: number): void {
  const small = costs(100);
  const large = costs(10_000);
  const logGrowth = Math.log2(10_000) / Math.log2(100);
  for (const [event, steps] of Object.entries(large)) {
    expect(steps, event).toBeLessThanOrEqual(small[event]! * logGrowth);
    expect(steps, event).toBeLessThan(most);
  }
}

describe("a lock's fold and decisions with a long queue", () => {
  it("take steps per event that grow no faster than log n from 100 to 10,000 waiters", () => {
    // A handful of index steps each, not the queue (a walk reads 10,000 waiters).
    expectLogGrowth(costsWith, 200);
  }, 60_000);

  it("take steps per event that grow no faster than log n from 100 to 10,000 waiters under sessions", () => {
    // A handful of steps each: reading every waiter's session would take 10,000 at least.
    expectLogGrowth(sessionCostsWith, 300);
  }, 60_000);
});

/** Sessions as the session table keeps them for a lock's decisions: by id, with the log of closes. */
class Sessions implements SessionLookup {
  readonly states = new Map<string, SessionState>();
  readonly closes = new SessionCloseLog();

  get(id: string): SessionState | undefined {
    return this.states.get(id);
  }

  open(id: string, owner: string, now: number): void {
    this.states.set(id, { id, opened: true, owner, ttlMs: 30_000, expiresAtMs: now + 30_000, expiresAt: "", closedAtMs: null });
  }

  keepAlive(id: string, now: number): void {
    this.states.set(id, { ...this.states.get(id)!, expiresAtMs: now + 30_000 });
  }

  close(id: string, now: number): void {
    this.states.set(id, { ...this.states.get(id)!, closedAtMs: now });
    this.closes.closed(id);
  }
}

/**
 * Steps per event with `n` waiters queued under sessions of their own behind
 * a holder, decided with the sessions at hand as the runtime hands them over.
 */
function sessionCostsWith(n: number) {
  const lock = new Lock();
  const sessions = new Sessions();
  const run = (command: LockCommand) => lock.run({ ...command, sessions });
  expect(run({ op: "acquire", owner: "holder", ttlMs: 60_000 }).outcome).toBe("append");
  for (let i = 0; i < n; i++) {
    lock.now++;
    sessions.open(`s${i}`, `w${i}`, lock.now);
    expect(run({ op: "acquire", owner: `w${i}`, waitMs: 600_000, requestId: `r${i}`, session: `s${i}` }).outcome).toBe("append");
  }
  expect(lock.state.waiters.sessionWaiters).toBe(n);
  // Every session kept alive: their ends move on, which no lock event records.
  lock.now += 1000;
  for (let i = 0; i < n; i++) sessions.keepAlive(`s${i}`, lock.now);
  sessions.open("late", "late", lock.now);
  // The first reading builds the buffer's indexes and its watch of the sessions (once per buffer, O(n)); what follows is per event.
  run({ op: "get" });
  const join = stepsOf(() => run({ op: "acquire", owner: "late", waitMs: 600_000, requestId: "late", session: "late" }));
  const retry = stepsOf(() => {
    expect(run({ op: "acquire", owner: "late", waitMs: 600_000, requestId: "late", session: "late" }).outcome).toBe("reply");
  });
  const get = stepsOf(() => expect(run({ op: "get" })).toMatchObject({ outcome: "reply", reply: { waiters: n + 1 } }));
  const renewal = stepsOf(() => run({ op: "renew", owner: "holder", etag: leaseEtag(lock.state.lease!) }));
  lock.now += 10;
  const handover = stepsOf(() => {
    run({ op: "release", etag: leaseEtag(lock.state.lease!) });
    const claimed = run({ op: "claim", owner: "w0", place: 2, giveUpAt: lock.now + 600_000, waitingSince: T0, session: "s0" });
    expect(claimed).toMatchObject({ outcome: "append", type: "LockAcquired" });
  });
  expect(lock.state.lease).toMatchObject({ owner: "w0", session: "s0" });
  // The holder's session and one waiter's end: the next decisions read those two, not every waiter's session, and the grant
  // records both ends, which its fold applies to the two places alone.
  lock.now += 10;
  const middle = `s${n / 2}`;
  const next = stepsOf(() => {
    sessions.close("s0", lock.now);
    sessions.close(middle, lock.now);
    expect(run({ op: "get" })).toMatchObject({ reply: { lease: null, waiters: n - 1 } });
    const claimed = run({ op: "claim", owner: "w1", place: 3, giveUpAt: lock.now + 600_000, waitingSince: T0, session: "s1" });
    expect(claimed).toMatchObject({ outcome: "append", data: { sessionEnds: { s0: expect.any(String), [middle]: expect.any(String) } } });
  });
  expect(lock.state.waiters.sessionWaiters).toBe(n - 2);
  // Half the waiters' sessions end by time alone, nothing closed: the next join finds them by their ends and records them, and
  // its fold applies them to their places, in steps per session that ended; then a read is back to a handful.
  lock.now += 60_000;
  for (let i = 1; i < n; i++) if (i % 2 === 0 || i === 1) sessions.keepAlive(`s${i}`, lock.now - 1);
  const live = n / 2 - 1; // the even ones but the closed one in the middle, and the plain join
  const expiredPerEnd =
    stepsOf(() => {
      const joined = run({ op: "acquire", owner: "plain", waitMs: 600_000 });
      expect(Object.keys((joined as { data: { sessionEnds: object } }).data.sessionEnds)).toHaveLength(n / 2);
      // The first count after them moves each place whose wait ended past its end once.
      expect(run({ op: "get" })).toMatchObject({ reply: { waiters: live } });
    }) /
    (n / 2);
  const after = stepsOf(() => expect(run({ op: "get" })).toMatchObject({ reply: { waiters: live } }));
  return { join, retry, get, renewal, handover, next, expiredPerEnd, after };
}
