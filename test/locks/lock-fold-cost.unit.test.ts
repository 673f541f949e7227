/**
 * What a lock's fold and decisions cost per event with a long queue, counted
 * in the queue's own steps (src/lock/waiter-index.ts, `queueWork`:
 * index nodes visited, heap moves by depth, waiters read or copied), not
 * timed: with 10,000 waiters recorded, a join (its decision under
 * --max-waiters, with a requestId, and its fold), a renewal, a handover to
 * the head (release, the head's claim, the grant's fold) and a `lock.get`
 * take at most the log n growth of the steps they take with 100: a walk of
 * the queue would take 100 times as many. What still grows: a decision on a
 * lock whose waiters wait under sessions reads each of them against its
 * session, a few walks and no index built for that one reading.
 */
import { describe, expect, it } from "vitest";
import { encodeEvent, type EventEnvelope, type HistoryEntry } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import type { LockCommand, LockSettings } from "../../src/lock/commands.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import { leaseEtag, type LockState } from "../../src/lock/state.ts";
import type { SessionState } from "../../src/session/state.ts";
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

describe("a lock's fold and decisions with a long queue", () => {
  it("take steps per event that grow no faster than log n from 100 to 10,000 waiters", () => {
    const small = costsWith(100);
    const large = costsWith(10_000);
    const logGrowth = Math.log2(10_000) / Math.log2(100);
    for (const [event, steps] of Object.entries(large)) {
      expect(steps, event).toBeLessThanOrEqual(small[event as keyof typeof small] * logGrowth);
    }
    // A handful of index steps each, not the queue (a walk reads 10,000 waiters).
    for (const [event, steps] of Object.entries(large)) expect(steps, event).toBeLessThan(200);
  }, 60_000);

  it("walk the queue a few times per decision when its waiters wait under sessions, building no index for that one reading", () => {
    // The cost that still grows (docs/locks.md, "What a queue costs"): each decision reads every session waiter's session.
    const lock = new Lock();
    lock.run({ op: "acquire", owner: "holder", ttlMs: 60_000 });
    const n = 2000;
    const sessions = new Map<string, SessionState>();
    for (let i = 0; i < n; i++) {
      const id = `s${i}`;
      sessions.set(id, { id, opened: true, owner: `w${i}`, ttlMs: 30_000, expiresAtMs: T0 + 300_000, expiresAt: "", closedAtMs: null });
      lock.now++;
      lock.run({ op: "acquire", owner: `w${i}`, waitMs: 600_000, session: id, sessions });
    }
    expect(lock.state.waiters.sessionWaiters).toBe(n);
    const steps = stepsOf(() => expect(lock.run({ op: "get", sessions })).toMatchObject({ reply: { waiters: n } }));
    expect(steps).toBeGreaterThanOrEqual(n);
    expect(steps).toBeLessThanOrEqual(4 * n);
  });
});
