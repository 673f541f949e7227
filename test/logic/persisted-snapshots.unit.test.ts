/**
 * Projection snapshots keep each state (its context), not XState's persisted
 * snapshot around it: a lock held by an owner with a waiter queued,
 * serialized as a snapshot keeps it, revives to the very state that was
 * saved (its queue, kept as a plain array of waiters, a queue again), and
 * XState's own `createActor` restores the lock statechart (the same state
 * node, the same context) from the persisted snapshot of what it revived
 * to; the data kinds' kept states restore through XState too.
 */
import { describe, expect, it } from "vitest";
import { createActor } from "xstate";
import { encodeEvent, type EventEnvelope, type HistoryEntry } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import type { KindLogic } from "../../src/actors/kind-logic.ts";
import type { Command } from "../../src/actors/kind-logic.ts";
import { transitionSnapshotOf } from "../../src/actors/kind-logic.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import { lockMachine, lockStateValue } from "../../src/lock/logic.ts";
import type { LockSettings } from "../../src/lock/commands.ts";
import { proxyLogic, proxyMachineLogic } from "../../src/proxy/logic.ts";
import type { LockState } from "../../src/lock/state.ts";
import { NO_WAITERS } from "../../src/lock/state.ts";

const SETTINGS: LockSettings = { lockTtlMs: 1000, maxTtlMs: 5000, claimWindowMs: 200 };
const T0 = Date.parse("2026-12-04T00:00:00.000Z");

/** Decides `command` at `now` and folds what it appended, as the stream would record it at sequence `seq`. */
function step<S, C extends Command>(logic: KindLogic<S, C>, state: S, command: C, now: number, seq: number): S {
  const decision = logic.decide(state, command, now);
  if (decision.outcome !== "append") return state;
  const envelope = { type: decision.type, v: 1, at: new Date(now).toISOString(), kind: logic.kind, id: "x", data: decision.data };
  const entry: HistoryEntry = decodeEvent(encodeEvent(envelope as unknown as EventEnvelope), seq);
  return logic.evolve(state, entry);
}

describe("projection snapshots keep each state, from which XState's persisted snapshot is made", () => {
  it("a lock held with a waiter queued: XState restores the statechart from it, and it revives to the saved state", () => {
    const logic = lockLogic(SETTINGS);
    let state: LockState = logic.initialState("x");
    state = step(logic, state, { op: "acquire", owner: "a", ttlMs: 1000 }, T0, 1);
    state = step(logic, state, { op: "acquire", owner: "b", waitMs: 5000, requestId: "rb" }, T0 + 10, 2);
    expect(state.lease?.owner).toBe("a");
    expect(state.waiters).toHaveLength(1);

    const kept = logic.serializeState!(state);
    // The queue is kept as a plain array of its waiters; nothing of XState's snapshot is kept around the state.
    const context = { ...state, waiters: [...state.waiters] };
    expect(kept).toEqual(context);
    const revived = logic.reviveState!(structuredClone(kept) as LockState);
    expect(revived).toEqual(state);
    // XState's persisted snapshot of the statechart is made from the state alone: its value is read from it.
    const persisted = { status: "active", value: lockStateValue(revived), context: revived, children: {}, historyValue: {} };
    const restored = createActor(lockMachine(SETTINGS), { snapshot: persisted as never, input: { id: "x" } }).getSnapshot();
    expect(restored.value).toBe("held");
    expect(restored.context).toEqual(revived);
    // Revived, the queue is a queue again: its waiter found by seq, and counted at an instant.
    expect(revived.waiters.at(revived.waiters.indexOfSeq(2))?.owner).toBe("b");
    expect([revived.waiters.waitingAt(T0 + 10), revived.waiters.waitingAt(T0 + 5010)]).toEqual([1, 0]);
    // A lock nobody waits for revives to the one shared empty queue.
    const free = step(logic, logic.initialState("y"), { op: "acquire", owner: "a", ttlMs: 1000 }, T0, 1);
    const revivedFree = logic.reviveState!(structuredClone(logic.serializeState!(free)) as LockState);
    expect(revivedFree.waiters).toBe(NO_WAITERS);
  });

  it("a proxy (fromTransition): XState restores its context, and it revives to the saved state", () => {
    const settings = { cooldownMs: 1000, cooldownBackoff: 1, maxCooldownMs: 60_000 };
    const logic = proxyLogic(settings);
    const state = step(logic, logic.initialState("x"), { op: "register", proxy: "x", maxLeases: 2 } as never, T0, 1);
    // A data kind keeps its state as it is.
    expect("serializeState" in logic).toBe(false);
    const revived = logic.reviveState === undefined ? structuredClone(state) : logic.reviveState(structuredClone(state));
    expect(revived).toEqual(state);
    const machineLogic = proxyMachineLogic(settings);
    const persisted = machineLogic.getPersistedSnapshot(transitionSnapshotOf(revived));
    const restored = createActor(machineLogic, { snapshot: persisted, input: { id: "x" } }).getSnapshot();
    expect(restored.context).toEqual(state);
  });
});
