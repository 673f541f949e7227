/**
 * The lock decider bound to the one given/when/then helper
 * (test/support/decider-spec.ts), and builders of lock events.
 */
import type { HistoryEntry, UnparsableRecord } from "../../src/events/envelope.ts";
import type { LockEvent } from "../../src/lock/events.ts";
import type { LockCommand, LockSettings } from "../../src/lock/commands.ts";
import { decideLock } from "./lock-logic.ts";
import { etagOf, initialLockState, type LockState } from "../../src/lock/state.ts";
import { evolveLock } from "./lock-logic.ts";
import { deciderSpec, type Then as SpecThen } from "./decider-spec.ts";
import { iso, specEvent, T0 } from "./event-builders.ts";

export { etagOf, iso, T0 };

/** docs/protocol.md's default lock settings. */
export const DEFAULT_SETTINGS: LockSettings = { lockTtlMs: 30_000, maxTtlMs: 30_000 };
/** The lock name specs use unless they name another. */
export const LOCK = "orders.eu/primary";

type DataOf<T extends LockEvent["type"]> = Extract<LockEvent, { type: T }>["data"];

/**
 * One recorded lock event at stream sequence `seq`, decided at `at` (epoch ms).
 * It goes through encode/decode, so a spec can only be given events the stream would accept.
 */
export function lockEvent<T extends LockEvent["type"]>(seq: number, type: T, data: DataOf<T>, at = T0, name = LOCK): HistoryEntry {
  return specEvent(seq, "lock", name, type, data, at);
}

/** `LockAcquired` by `owner` at `at` for `ttlMs` (expiry derived as the decider would). */
export function acquired(
  seq: number,
  e: { owner: string; generation: number; at?: number; ttlMs?: number; previousOwner?: string },
): HistoryEntry {
  const at = e.at ?? T0;
  const ttlMs = e.ttlMs ?? DEFAULT_SETTINGS.lockTtlMs;
  return lockEvent(
    seq,
    "LockAcquired",
    { owner: e.owner, generation: e.generation, ttlMs, expiresAt: iso(at + ttlMs), previousOwner: e.previousOwner ?? "" },
    at,
  );
}

/** `LockRenewed` by `owner` at `at` for `ttlMs`. */
export function renewed(seq: number, e: { owner: string; generation: number; at: number; ttlMs?: number }): HistoryEntry {
  const ttlMs = e.ttlMs ?? DEFAULT_SETTINGS.lockTtlMs;
  return lockEvent(seq, "LockRenewed", { owner: e.owner, generation: e.generation, ttlMs, expiresAt: iso(e.at + ttlMs) }, e.at);
}

/** `LockReleased` of generation `generation` at `at`. */
export function released(seq: number, e: { owner: string; generation: number; at?: number }): HistoryEntry {
  return lockEvent(seq, "LockReleased", { owner: e.owner, generation: e.generation }, e.at ?? T0);
}

/** `LockReset` carrying `generation` at `at`. */
export function reset(seq: number, e: { generation: number; at?: number }): HistoryEntry {
  return lockEvent(seq, "LockReset", { generation: e.generation }, e.at ?? T0);
}

/** A message on the lock's subject that does not parse. */
export function unparsable(seq: number, reason = "not JSON"): UnparsableRecord {
  return { seq, unparsable: true, reason };
}

/** What a spec expects of a decision. */
export type Then = SpecThen<LockEvent>;

/** A lock with a given history, ready for a command. */
export interface Given {
  readonly state: LockState;
  when(command: LockCommand, now: number): Then;
}

/** Folds `history` with evolveLock and returns a spec builder for the resulting state. */
export function givenLock(history: readonly HistoryEntry[], settings: LockSettings = DEFAULT_SETTINGS, name = LOCK): Given {
  const given = lockSpec.given(history, name);
  return { state: given.state, when: (command, now) => given.when(command, now, settings) };
}

/** The lock kind's specs. */
export const lockSpec = deciderSpec<LockState, LockCommand, LockEvent, LockSettings>(
  { initial: initialLockState, evolve: evolveLock, decide: decideLock },
  DEFAULT_SETTINGS,
  LOCK,
);
