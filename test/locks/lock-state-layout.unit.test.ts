/**
 * The lock's live state keeps only what cannot be derived (docs/performance.md,
 * "Memory per held lock"): a lease keeps its write's sequence and its expiry
 * in ms, and the wire's etag and `expiresAt` are rendered from them, equal to
 * what the events recorded; a lock nobody waits for shares one empty queue.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { evolveLock } from "../support/lock-logic.ts";
import { etagOf, initialLockState, leaseView, type LockState } from "../../src/lock/state.ts";
import { NO_WAITERS } from "../../src/lock/state.ts";
import { applySessionEnds } from "../../src/lock/session-waiters.ts";
import type { HistoryEntry } from "../../src/events/envelope.ts";
import { iso, LOCK, lockEvent, T0 } from "../support/lock-given.ts";

const S = 1000;
const fold = (history: readonly HistoryEntry[], from: LockState = initialLockState(LOCK)) => history.reduce(evolveLock, from);

/** The string-valued fields an object keeps itself. */
const ownStrings = (o: object) =>
  Object.entries(o)
    .filter(([, v]) => typeof v === "string")
    .map(([k]) => k)
    .sort();

describe("a lock's compact state", () => {
  it("renders the etag and expiresAt the events recorded, keeping no string but the owner's", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 40 }),
        fc.integer({ min: 0, max: 3600 * S }),
        fc.integer({ min: 1, max: 3600 * S }),
        fc.option(fc.integer({ min: 1, max: 3600 * S }), { nil: undefined }),
        (seq, atOffset, ttlMs, renewTtlMs) => {
          const at = T0 + atOffset;
          const expiresAt = iso(at + ttlMs);
          const history = [lockEvent(seq, "LockAcquired", { owner: "w", generation: 1, ttlMs, expiresAt, previousOwner: "" }, at)];
          let last = { seq, expiresAt, ttlMs };
          if (renewTtlMs !== undefined) {
            last = { seq: seq + 7, expiresAt: iso(at + S + renewTtlMs), ttlMs: renewTtlMs };
            history.push(
              lockEvent(last.seq, "LockRenewed", { owner: "w", generation: 1, ttlMs: renewTtlMs, expiresAt: last.expiresAt }, at + S),
            );
          }
          const lease = fold(history).lease!;
          expect(leaseView(LOCK, lease)).toEqual({
            name: LOCK,
            owner: "w",
            generation: 1,
            etag: etagOf(last.seq),
            expiresAt: last.expiresAt,
            ttlMs: last.ttlMs,
          });
          expect(ownStrings(lease)).toEqual(["owner"]);
        },
      ),
    );
  });

  it("shows a session lease's grant expiry until its session's end is recorded, then that end", () => {
    const granted = fold([
      lockEvent(
        3,
        "LockAcquired",
        { owner: "w", generation: 1, ttlMs: 5 * S, expiresAt: iso(T0 + 5 * S), previousOwner: "", session: "s1" },
        T0,
      ),
    ]);
    expect(leaseView(LOCK, granted.lease!)).toMatchObject({ expiresAt: iso(T0 + 5 * S), session: "s1", etag: etagOf(3) });
    expect(ownStrings(granted.lease!)).toEqual(["owner", "session"]);
    const ended = applySessionEnds(granted, { s1: iso(T0 + 9 * S) });
    expect(leaseView(LOCK, ended.lease!).expiresAt).toBe(iso(T0 + 9 * S));
    // Reading the session's end leaves the empty queue shared too.
    expect(ended.waiters).toBe(NO_WAITERS);
  });

  it("gives every lock nobody waits for the one shared empty queue, also once its waiters have gone", () => {
    expect(initialLockState("a").waiters).toBe(NO_WAITERS);
    expect(initialLockState("b").waiters).toBe(initialLockState("a").waiters);
    const queued = (seq: number, at: number) =>
      lockEvent(seq, "LockWaiterQueued", { owner: "q", until: iso(at + 2 * S), claimWindowMs: S }, at);
    const held = fold([
      lockEvent(1, "LockAcquired", { owner: "w", generation: 1, ttlMs: 10 * S, expiresAt: iso(T0 + 10 * S), previousOwner: "" }, T0),
    ]);
    // The only waiter is granted the lock: its place leaves an empty queue.
    const waiting = fold([queued(2, T0 + S), lockEvent(3, "LockReleased", { owner: "w", generation: 1 }, T0 + S)], held);
    expect(waiting.waiters).toHaveLength(1);
    const granted = fold(
      [
        lockEvent(
          4,
          "LockAcquired",
          { owner: "q", generation: 2, ttlMs: S, expiresAt: iso(T0 + 3 * S), previousOwner: "", waiterSeq: 2 },
          T0 + 2 * S,
        ),
      ],
      waiting,
    );
    expect(granted.waiters).toBe(NO_WAITERS);
    // The only waiter's wait ends unserved: the next event finds the queue empty.
    const gaveUp = fold([queued(5, T0 + 4 * S), lockEvent(6, "LockReleased", { owner: "q", generation: 2 }, T0 + 60 * S)], granted);
    expect(gaveUp.waiters).toBe(NO_WAITERS);
  });
});
