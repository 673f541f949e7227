/**
 * The "then" half of the deciders' given/when/then specs: what a spec may
 * expect of one decision (records an event, replies, or rejects with a code).
 */
import { expect } from "vitest";
import type { ErrorCode } from "../../src/contract/errors.ts";
import type { Decision } from "../../src/actors/decision.ts";
import type { EventEnvelope } from "../../src/events/index.ts";

/** What a spec expects of a decision of an actor whose events are `E`. */
export interface DecisionThen<E extends EventEnvelope> {
  readonly decision: Decision<E>;
  /** The decider records exactly this event. */
  thenRecords<T extends E["type"]>(type: T, data: Extract<E, { type: T }>["data"]): void;
  /** The decider replies without recording anything. */
  thenReplies(reply: unknown): void;
  /** The decider refuses with `code` (and, when given, exactly these details). */
  thenRejects(code: ErrorCode, details?: Record<string, unknown>): void;
}

/** The expectations of one decision. */
export function thenOf<E extends EventEnvelope>(decision: Decision<E>): DecisionThen<E> {
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
}
