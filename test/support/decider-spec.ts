/**
 * The one given/when/then helper for every kind's decider: given a history
 * (events with their stream sequences, folded by the kind's evolve), when a
 * command arrives at an instant, then the decider records one event, replies,
 * or rejects with a code. Each kind binds it to its decider once
 * (`givenLock`, `givenProxy`, `givenRoute`, `givenHost`) and adds its own
 * event builders.
 */
import { expect } from "vitest";
import type { ErrorCode } from "../../src/contract/errors.ts";
import type { Decision } from "../../src/actors/kind-logic.ts";
import type { EventEnvelope, HistoryEntry } from "../../src/events/envelope.ts";

/** What a spec expects of a decision of an actor whose events are `E`. */
export interface Then<E extends EventEnvelope> {
  readonly decision: Decision<E>;
  /** The decider records exactly this event. */
  thenRecords<T extends E["type"]>(type: T, data: Extract<E, { type: T }>["data"]): void;
  /** The decider replies without recording anything. */
  thenReplies(reply: unknown): void;
  /** The decider refuses with `code` (and, when given, exactly these details). */
  thenRejects(code: ErrorCode, details?: Record<string, unknown>): void;
}

/** A kind's pure core, as the specs drive it. */
export interface Decider<S, C, E extends EventEnvelope, X> {
  readonly initial: (id: string) => S;
  readonly evolve: (state: S, entry: HistoryEntry) => S;
  readonly decide: (state: S, command: C, now: number, settings: X) => Decision<E>;
}

/** An actor with a given state, ready for a command. */
export interface Given<S, C, E extends EventEnvelope, X> {
  readonly state: S;
  when(command: C, now: number, settings?: X): Then<E>;
}

/** Specs of one kind: `given(history)` folds it; `givenState(state)` starts from an explicit state (e.g. a pruned one). */
export interface Spec<S, C, E extends EventEnvelope, X> {
  given(history: readonly HistoryEntry[], id?: string): Given<S, C, E, X>;
  givenState(state: S): Given<S, C, E, X>;
}

/** Binds the helper to a kind's decider, its default settings and the id specs use unless they name another. */
export function deciderSpec<S, C, E extends EventEnvelope, X>(
  decider: Decider<S, C, E, X>,
  defaults: X,
  defaultId: string,
): Spec<S, C, E, X> {
  const givenState = (state: S): Given<S, C, E, X> => ({
    state,
    when: (command, now, settings = defaults) => thenOf(decider.decide(state, command, now, settings)),
  });
  return {
    given: (history, id = defaultId) => givenState(history.reduce(decider.evolve, decider.initial(id))),
    givenState,
  };
}

/** The expectations of one decision. */
export function thenOf<E extends EventEnvelope>(decision: Decision<E>): Then<E> {
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
