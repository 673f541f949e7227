/**
 * The lock's logic as two plain functions, for tests that drive decisions and
 * folds one at a time: `decideLock` under given settings, `evolveLock` with
 * any settings (folding reads none; settings shape decisions only).
 */
import type { HistoryEntry } from "../../src/events/envelope.ts";
import type { Decision, KindLogic } from "../../src/actors/kind-logic.ts";
import type { LockCommand, LockSettings } from "../../src/lock/commands.ts";
import type { LockEvent } from "../../src/lock/events.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import type { LockState } from "../../src/lock/state.ts";

const FOLD = lockLogic({ lockTtlMs: 1, maxTtlMs: 1 });

/** Folds one history entry into a lock's state. */
export function evolveLock(state: LockState, entry: HistoryEntry): LockState {
  return FOLD.evolve(state, entry);
}

const logics = new WeakMap<LockSettings, KindLogic<LockState, LockCommand, LockEvent>>();

/** Decides one lock command under `settings` (the logic built once per settings object). */
export function decideLock(state: LockState, command: LockCommand, now: number, settings: LockSettings): Decision<LockEvent> {
  let logic = logics.get(settings);
  if (logic === undefined) logics.set(settings, (logic = lockLogic(settings)));
  return logic.decide(state, command, now);
}
