/**
 * The XState machine that drives one actor's turns. One machine instance per
 * actor id lives as long as the actor is active; each command is one turn:
 *
 *   idle → deciding → appending → idle                 (recorded an event)
 *                   → verifying → idle                 (reply or refusal, after
 *                                                        checking the stream has
 *                                                        nothing newer)
 *   appending → catchingUp → deciding                  (conflict: someone else wrote)
 *   appending → appending (same msg id) → catchingUp   (ack lost: retry once, then
 *                                                        answer from the history)
 *
 * The mailbox lives in the cell; the machine takes one command at a time.
 * Effects (log I/O) are started by entry actions and report back as events, so
 * the machine alone decides what happens next. The context is the mutable
 * {@link Cell}: turns mutate it in place rather than copying state per event.
 */
import { createActor, setup, type ActorRefFrom } from "xstate";
import type { HistoryEntry } from "../events/index.ts";
import type { Cell, TurnEffects } from "./cell.ts";

/** Events the turn machine takes. */
export type TurnEvent =
  | { type: "MAIL" }
  | { type: "CAUGHT_UP"; entries: HistoryEntry[] }
  | { type: "APPENDED"; seq: number; duplicate: boolean }
  | { type: "CONFLICT" }
  | { type: "UNCERTAIN" }
  | { type: "FRESH" }
  | { type: "STALE" }
  | { type: "LOG_FAILED"; error: Error };

interface TurnContext {
  readonly cell: Cell;
  readonly fx: TurnEffects;
}

/** The turn machine, shared by every kind (the kind's logic lives in the cell). */
export const turnMachine = setup({
  types: {
    context: {} as TurnContext,
    events: {} as TurnEvent,
    input: {} as TurnContext,
  },
  actions: {
    startHydration: ({ context, self }) => context.fx.hydrate(context.cell, self.send),
    startCatchUp: ({ context, self }) => context.fx.catchUp(context.cell, self.send),
    applyEntries: ({ context, event }) => {
      if (event.type === "CAUGHT_UP") context.fx.apply(context.cell, event.entries);
    },
    failMailbox: ({ context, event }) => {
      if (event.type === "LOG_FAILED") context.fx.failAll(context.cell, event.error);
    },
    takeTurn: ({ context }) => context.fx.takeTurn(context.cell),
    decide: ({ context }) => context.fx.decide(context.cell),
    startAppend: ({ context, self }) => context.fx.append(context.cell, self.send),
    noteUncertain: ({ context }) => {
      context.cell.current!.uncertain += 1;
    },
    applyOwnEvent: ({ context, event }) => {
      if (event.type === "APPENDED") context.fx.applyOwn(context.cell, event.seq);
    },
    startFreshnessCheck: ({ context, self }) => context.fx.checkFresh(context.cell, self.send),
    answerDecision: ({ context }) => context.fx.answerDecision(context.cell),
    answerFromHistory: ({ context }) => context.fx.answerFromHistory(context.cell),
    answerUnavailable: ({ context, event }) =>
      context.fx.answerUnavailable(context.cell, event.type === "LOG_FAILED" ? event.error : undefined),
  },
  guards: {
    hasMail: ({ context }) => context.cell.mailbox.length > 0,
    answered: ({ context }) => context.cell.current === null,
    wantsAppend: ({ context }) => context.cell.current!.decision?.outcome === "append",
    firstUncertainty: ({ context }) => context.cell.current!.uncertain === 0,
    ownEventFound: ({ context }) => context.fx.ownEventRecorded(context.cell),
    outOfAttempts: ({ context }) => context.fx.outOfAttempts(context.cell),
  },
}).createMachine({
  id: "actor",
  context: ({ input }) => input,
  initial: "hydrating",
  states: {
    dormant: {
      on: { MAIL: "hydrating" },
    },
    hydrating: {
      entry: "startHydration",
      on: {
        CAUGHT_UP: { target: "idle", actions: "applyEntries" },
        LOG_FAILED: { target: "dormant", actions: "failMailbox" },
      },
    },
    idle: {
      always: { guard: "hasMail", target: "deciding", actions: "takeTurn" },
    },
    deciding: {
      entry: "decide",
      always: [
        { guard: "answered", target: "idle" },
        { guard: "wantsAppend", target: "appending" },
        { target: "verifying" },
      ],
    },
    verifying: {
      entry: "startFreshnessCheck",
      on: {
        FRESH: { target: "idle", actions: "answerDecision" },
        STALE: "catchingUp",
        LOG_FAILED: { target: "idle", actions: "answerUnavailable" },
      },
    },
    appending: {
      entry: "startAppend",
      on: {
        APPENDED: [
          { guard: ({ event }) => !event.duplicate, target: "idle", actions: "applyOwnEvent" },
          { target: "catchingUp" },
        ],
        CONFLICT: "catchingUp",
        UNCERTAIN: [
          // The ack was lost: publish again with the same message id and expected
          // sequence. JetStream stores it at most once, so this settles the question.
          { guard: "firstUncertainty", target: "appending", reenter: true, actions: "noteUncertain" },
          { target: "catchingUp", actions: "noteUncertain" },
        ],
        LOG_FAILED: { target: "idle", actions: "answerUnavailable" },
      },
    },
    catchingUp: {
      entry: "startCatchUp",
      on: {
        CAUGHT_UP: { target: "caughtUp", actions: "applyEntries" },
        LOG_FAILED: { target: "idle", actions: "answerUnavailable" },
      },
    },
    caughtUp: {
      always: [
        { guard: "ownEventFound", target: "idle", actions: "answerFromHistory" },
        { guard: "outOfAttempts", target: "idle", actions: "answerUnavailable" },
        { target: "deciding" },
      ],
    },
  },
});

/** A running turn machine. */
export type TurnActor = ActorRefFrom<typeof turnMachine>;

/** Starts the turn machine for a cell. */
export function startTurnActor(cell: Cell, fx: TurnEffects): TurnActor {
  const actor = createActor(turnMachine, { input: { cell, fx } });
  actor.start();
  return actor;
}
