/**
 * The lock fold marks a history corrupt at the first entry that breaks the
 * lock's invariants, and says which entry and why: the reason is what an
 * operator reads in the CORRUPT answer before resetting the lock.
 */
import { describe, expect, it } from "vitest";
import { initialLockState } from "../../src/lock/state.ts";
import { evolveLock } from "../support/lock-logic.ts";
import type { HistoryEntry } from "../../src/events/envelope.ts";
import { acquired, LOCK, released, renewed, T0, unparsable } from "../support/lock-given.ts";

/** A host's event on the lock's subject: a type no lock writes. */
const hostEventOnTheLock: HistoryEntry = {
  seq: 1,
  event: { type: "HostStateSet", v: 1, at: new Date(T0).toISOString(), kind: "host", id: LOCK, data: { healthy: true, draining: false } },
};

const fold = (history: readonly HistoryEntry[]) => history.reduce(evolveLock, initialLockState(LOCK));

describe("lock fold corruption", () => {
  it.each([
    ["an unparsable event", [unparsable(1, "not JSON")], "event at sequence 1 does not parse (not JSON)"],
    [
      "a generation that is not one more",
      [acquired(1, { owner: "a", generation: 1 }), released(2, { owner: "a", generation: 1 }), acquired(3, { owner: "b", generation: 5 })],
      "LockAcquired at sequence 3 has generation 5, expected 2",
    ],
    [
      "a renewal of another generation by the same owner",
      [acquired(1, { owner: "a", generation: 1 }), renewed(2, { owner: "a", generation: 2, at: T0 })],
      "LockRenewed at sequence 2 does not match the current lease",
    ],
    [
      "a renewal by another owner",
      [acquired(1, { owner: "a", generation: 1 }), renewed(2, { owner: "b", generation: 1, at: T0 })],
      "LockRenewed at sequence 2 does not match the current lease",
    ],
    [
      "a release of another generation",
      [acquired(1, { owner: "a", generation: 1 }), released(2, { owner: "a", generation: 3 })],
      "LockReleased at sequence 2 does not match the current lease",
    ],
    ["an event of a type no lock writes", [hostEventOnTheLock], "event at sequence 1 has a type no lock writes (HostStateSet)"],
  ])("names %s", (_what, history, reason) => {
    expect(fold(history).corrupt).toBe(reason);
  });
});
