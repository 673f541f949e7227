/**
 * Given/when/then specs for the lock decider: given a lock's history (events
 * with their stream sequences), when a command arrives at an instant, then
 * the decider records one event, replies, or rejects with a code.
 */
import { expect } from "vitest";
import {
  decodeEvent,
  encodeEvent,
  isUnparsable,
  type EventEnvelope,
  type HistoryEntry,
  type UnparsableRecord,
} from "../../src/events/envelope.ts";
import type { LockEvent } from "../../src/events/lock-events.ts";
import type { Decision, ErrorCode } from "../../src/actors/decision.ts";
import type { LockCommand, LockSettings } from "../../src/actors/lock/commands.ts";
import { decideLock } from "../../src/actors/lock/decide.ts";
import { etagOf, evolveLock, initialLockState, type LockState } from "../../src/projections/lock.ts";

export { etagOf };

/** The instant specs start at. */
export const T0 = Date.parse("2026-01-01T00:00:00.000Z");
/** PROTOCOL.md's default lock settings. */
export const DEFAULT_SETTINGS: LockSettings = { lockTtlMs: 30_000, maxTtlMs: 30_000 };
/** The lock name specs use unless they name another. */
export const LOCK = "orders.eu/primary";

/** An instant as events carry it. */
export const iso = (ms: number): string => new Date(ms).toISOString();

type DataOf<T extends LockEvent["type"]> = Extract<LockEvent, { type: T }>["data"];

/**
 * One recorded lock event at stream sequence `seq`, decided at `at` (epoch ms).
 * It goes through encode/decode, so a spec can only be given events the stream would accept.
 */
export function lockEvent<T extends LockEvent["type"]>(seq: number, type: T, data: DataOf<T>, at = T0, name = LOCK): HistoryEntry {
  const envelope: EventEnvelope = { type, v: 1, at: iso(at), kind: "lock", id: name, data };
  const entry = decodeEvent(encodeEvent(envelope), seq, `msg-${seq}`);
  if (isUnparsable(entry)) throw new Error(`spec event at ${seq} does not parse: ${entry.reason}`);
  return entry;
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
export interface Then {
  readonly decision: Decision;
  /** The decider records exactly this event. */
  thenRecords<T extends LockEvent["type"]>(type: T, data: DataOf<T>): void;
  /** The decider replies without recording anything. */
  thenReplies(reply: unknown): void;
  /** The decider refuses with `code` (and, when given, exactly these details). */
  thenRejects(code: ErrorCode, details?: Record<string, unknown>): void;
}

/** A lock with a given history, ready for a command. */
export interface Given {
  readonly state: LockState;
  when(command: LockCommand, now: number): Then;
}

/** Folds `history` with evolveLock and returns a spec builder for the resulting state. */
export function givenLock(history: readonly HistoryEntry[], settings: LockSettings = DEFAULT_SETTINGS, name = LOCK): Given {
  const state = history.reduce(evolveLock, initialLockState(name));
  return {
    state,
    when(command, now) {
      const decision = decideLock(state, command, now, settings);
      return {
        decision,
        thenRecords(type, data) {
          expect(decision).toEqual({ outcome: "append", type, data });
        },
        thenReplies(reply) {
          expect(decision).toEqual({ outcome: "reply", reply });
        },
        thenRejects(code, details) {
          expect(decision.outcome).toBe("reject");
          if (decision.outcome !== "reject") return;
          expect(decision.rejection.code).toBe(code);
          expect(decision.rejection.message.length).toBeGreaterThan(0);
          if (details !== undefined) expect(decision.rejection.details).toEqual(details);
        },
      };
    },
  };
}
