/**
 * The wait queue, by example: given a lock's history (with `LockWaiterQueued`
 * events), when an acquire, a claim or a read arrives at an instant, then the
 * decider grants to the head in its claim window, keeps the others waiting
 * or refuses them as if the head held the lock. The exhaustive check against
 * a reference model is lock-queue-model.sim.test.ts.
 */
import { describe, expect, it } from "vitest";
import { queueAt, nextQueueChangeAt } from "../../src/lock/state.ts";
import type { HistoryEntry } from "../../src/events/envelope.ts";
import { acquired, givenLock, iso, LOCK, lockEvent, released, renewed, T0 } from "../support/lock-given.ts";

const S = 1000;
const WINDOW = 1000;

/** `LockWaiterQueued` by `owner` at `at`, waiting until `until`. */
function queued(seq: number, owner: string, at: number, until: number): HistoryEntry {
  return lockEvent(seq, "LockWaiterQueued", { owner, until: iso(until), claimWindowMs: WINDOW }, at);
}

/** Held by `holder` from T0 for 10 s; w1 joins at +1 s, w2 at +2 s, both waiting 60 s. */
const HELD_WITH_TWO_WAITERS = [
  acquired(1, { owner: "holder", generation: 1, ttlMs: 10 * S }),
  queued(2, "w1", T0 + S, T0 + 60 * S),
  queued(3, "w2", T0 + 2 * S, T0 + 60 * S),
];
const SETTINGS = { lockTtlMs: 5 * S, maxTtlMs: 30 * S, claimWindowMs: WINDOW };

describe("the wait queue", () => {
  it("counts live waiters in lock.get, and refuses an acquire without a place as long as the lease lives", () => {
    const lock = givenLock(HELD_WITH_TWO_WAITERS, SETTINGS);
    lock.when({ op: "get" }, T0 + 3 * S).thenReplies({ lease: expect.objectContaining({ owner: "holder" }) as unknown, waiters: 2 });
    lock.when({ op: "acquire", owner: "x" }, T0 + 3 * S).thenRejects("LEASE_EXISTS", { owner: "holder", expiresAt: iso(T0 + 10 * S) });
  });

  it("after the release the head has its claim window; everyone else is refused as if the head held the lock", () => {
    const lock = givenLock([...HELD_WITH_TWO_WAITERS, released(4, { owner: "holder", generation: 1, at: T0 + 5 * S })], SETTINGS);
    const view = queueAt(lock.state, T0 + 5 * S + 10);
    expect([view.head?.owner, view.headMayClaim, view.headLeavesAtMs]).toEqual(["w1", true, T0 + 5 * S + WINDOW]);
    lock.when({ op: "acquire", owner: "x" }, T0 + 5 * S + 10).thenRejects("LEASE_EXISTS", { owner: "w1", expiresAt: iso(T0 + 6 * S) });
    lock
      .when({ op: "claim", owner: "w2", place: 3, giveUpAt: T0 + 60 * S, waitingSince: T0 + 2 * S }, T0 + 5 * S + 10)
      .thenReplies({ waiting: { place: 3, untilMs: T0 + 60 * S } });
    lock
      .when({ op: "claim", owner: "w1", place: 2, giveUpAt: T0 + 60 * S, waitingSince: T0 + S }, T0 + 5 * S + 10)
      .thenRecords("LockAcquired", {
        owner: "w1",
        generation: 2,
        ttlMs: 5 * S,
        expiresAt: iso(T0 + 10 * S + 10),
        previousOwner: "",
        waiterSeq: 2,
      });
  });

  it("a head that does not claim in its window loses its place: the next one's window starts where the first ended", () => {
    const lock = givenLock([...HELD_WITH_TWO_WAITERS, released(4, { owner: "holder", generation: 1, at: T0 + 5 * S })], SETTINGS);
    expect(nextQueueChangeAt(lock.state, T0 + 5 * S)).toBe(T0 + 6 * S);
    const later = queueAt(lock.state, T0 + 6 * S);
    expect([later.head?.owner, later.headLeavesAtMs, later.live.length]).toEqual(["w2", T0 + 7 * S, 1]);
    lock
      .when({ op: "claim", owner: "w1", place: 2, giveUpAt: T0 + 60 * S, waitingSince: T0 + S }, T0 + 6 * S)
      .thenRejects("LEASE_EXISTS", { owner: "w2", expiresAt: iso(T0 + 7 * S), waitedMs: 5 * S });
  });

  it("the window opens at the lease's expiry without any event, and a renew by the holder keeps the head's place for later", () => {
    const expired = givenLock(HELD_WITH_TWO_WAITERS, SETTINGS);
    expect(queueAt(expired.state, T0 + 10 * S)).toMatchObject({ headMayClaim: true, headLeavesAtMs: T0 + 11 * S });
    const renewedLate = givenLock(
      [...HELD_WITH_TWO_WAITERS, renewed(4, { owner: "holder", generation: 1, at: T0 + 10 * S + 500, ttlMs: 5 * S })],
      SETTINGS,
    );
    const view = queueAt(renewedLate.state, T0 + 12 * S);
    expect([view.head?.owner, view.headMayClaim]).toEqual(["w1", false]);
    // Freed again by expiry at +15.5 s: a whole window from there.
    expect(queueAt(renewedLate.state, T0 + 15 * S + 500).headLeavesAtMs).toBe(T0 + 16 * S + 500);
  });

  it("skips a waiter whose wait ends before its window would open", () => {
    const lock = givenLock(
      [
        acquired(1, { owner: "holder", generation: 1, ttlMs: 10 * S }),
        queued(2, "brief", T0 + S, T0 + 3 * S),
        queued(3, "patient", T0 + 2 * S, T0 + 60 * S),
      ],
      SETTINGS,
    );
    const view = queueAt(lock.state, T0 + 10 * S);
    expect([view.head?.owner, view.headLeavesAtMs, view.live.map((w) => w.owner)]).toEqual(["patient", T0 + 11 * S, ["patient"]]);
  });

  it("a retry by requestId finds its place and appends nothing; with waitMs 0 it is refused meanwhile", () => {
    const withRequestId = lockEvent(2, "LockWaiterQueued", { owner: "w1", until: iso(T0 + 60 * S), claimWindowMs: WINDOW }, T0 + S);
    const entry = { ...withRequestId, event: { ...(withRequestId as { event: object }).event, requestId: "r1" } } as HistoryEntry;
    const lock = givenLock([acquired(1, { owner: "holder", generation: 1, ttlMs: 10 * S }), entry], SETTINGS);
    lock
      .when({ op: "acquire", owner: "w1", waitMs: 5 * S, requestId: "r1" }, T0 + 2 * S)
      .thenReplies({ waiting: { place: 2, untilMs: T0 + 60 * S } });
    lock
      .when({ op: "acquire", owner: "w1", requestId: "r1" }, T0 + 2 * S)
      .thenRejects("LEASE_EXISTS", { owner: "holder", expiresAt: iso(T0 + 10 * S) });
    // Another request of the same owner has no place.
    lock
      .when({ op: "acquire", owner: "w1", waitMs: 5 * S, requestId: "r2" }, T0 + 2 * S)
      .thenRecords("LockWaiterQueued", { owner: "w1", until: iso(T0 + 7 * S), claimWindowMs: WINDOW });
    // Nor has another owner's request that happens to carry the same requestId.
    lock
      .when({ op: "acquire", owner: "w2", waitMs: 5 * S, requestId: "r1" }, T0 + 2 * S)
      .thenRecords("LockWaiterQueued", { owner: "w2", until: iso(T0 + 7 * S), claimWindowMs: WINDOW });
  });

  it("a retry by requestId of the head in its claim window takes the lock; a retry of the place behind it keeps waiting", () => {
    const withRequestId = (entry: HistoryEntry, requestId: string) =>
      ({ ...entry, event: { ...(entry as { event: object }).event, requestId } }) as HistoryEntry;
    const lock = givenLock(
      [
        acquired(1, { owner: "holder", generation: 1, ttlMs: 10 * S }),
        withRequestId(queued(2, "w1", T0 + S, T0 + 60 * S), "r1"),
        withRequestId(queued(3, "w2", T0 + 2 * S, T0 + 60 * S), "r2"),
        released(4, { owner: "holder", generation: 1, at: T0 + 5 * S }),
      ],
      SETTINGS,
    );
    lock.when({ op: "acquire", owner: "w1", waitMs: 5 * S, requestId: "r1" }, T0 + 5 * S + 500).thenRecords("LockAcquired", {
      owner: "w1",
      generation: 2,
      ttlMs: 5 * S,
      expiresAt: iso(T0 + 10 * S + 500),
      previousOwner: "",
      waiterSeq: 2,
    });
    lock
      .when({ op: "acquire", owner: "w2", waitMs: 5 * S, requestId: "r2" }, T0 + 5 * S + 500)
      .thenReplies({ waiting: { place: 3, untilMs: T0 + 60 * S } });
  });

  it("says in LEASE_EXISTS when the lock is held by the head waiter's claim window rather than by a lease", () => {
    const messageAt = (history: HistoryEntry[], now: number) => {
      const { decision } = givenLock(history, SETTINGS).when({ op: "acquire", owner: "late" }, now);
      return decision.outcome === "reject" ? decision.rejection.message : decision.outcome;
    };
    const freed = [...HELD_WITH_TWO_WAITERS, released(4, { owner: "holder", generation: 1, at: T0 + 5 * S })];
    expect(messageAt(freed, T0 + 5 * S + 500)).toMatch(/ is held by w1 until .* \(its claim window\)$/);
    expect(messageAt(HELD_WITH_TWO_WAITERS, T0 + 4 * S)).toBe(`lock ${LOCK} is held by holder until ${iso(T0 + 10 * S)}`);
  });

  it("a wait that runs out while nobody holds the lock and nobody waits names no claim window in LEASE_EXISTS", () => {
    // w1 joins behind a 1 s lease, waiting until +4 s; its window (+1 s to +2 s) passes unclaimed.
    const lock = givenLock([acquired(1, { owner: "holder", generation: 1, ttlMs: S }), queued(2, "w1", T0 + S / 2, T0 + 4 * S)], SETTINGS);
    const { decision } = lock.when({ op: "claim", owner: "w1", place: 2, giveUpAt: T0 + 4 * S, waitingSince: T0 + S / 2 }, T0 + 4 * S);
    expect(decision.outcome === "reject" ? decision.rejection.message : decision.outcome).toBe(
      `lock ${LOCK} is held by  until ${iso(T0 + 4 * S)}`,
    );
    lock
      .when({ op: "claim", owner: "w1", place: 2, giveUpAt: T0 + 4 * S, waitingSince: T0 + S / 2 }, T0 + 4 * S)
      .thenRejects("LEASE_EXISTS", { owner: "", expiresAt: iso(T0 + 4 * S), waitedMs: 3500 });
  });

  it("at the very millisecond the lease ends the head waiter's claim window holds the lock, not the ended lease", () => {
    const lock = givenLock(HELD_WITH_TWO_WAITERS, SETTINGS);
    const { decision } = lock.when({ op: "acquire", owner: "late" }, T0 + 10 * S);
    expect(decision.outcome === "reject" ? decision.rejection.message : decision.outcome).toBe(
      `lock ${LOCK} is held by w1 until ${iso(T0 + 11 * S)} (its claim window)`,
    );
    lock.when({ op: "acquire", owner: "late" }, T0 + 10 * S).thenRejects("LEASE_EXISTS", { owner: "w1", expiresAt: iso(T0 + 11 * S) });
  });
});
