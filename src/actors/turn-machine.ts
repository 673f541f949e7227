/**
 * The XState machine of one actor (one lock, proxy, host or route id). Its
 * context holds the commands waiting for their turn (XState's own mailbox:
 * a `COMMAND` is taken in any state and queued with `assign`) and the turn in
 * progress; the actor's state is not here but in its kind's projection, read
 * at each decision. One turn:
 *
 *   turn.deciding ─ append ──► turn.appending ─ acked ─────────────► idle (reply)
 *        │    ▲                     │ conflict / duplicate / lost ack twice
 *        │    └──── turn.catchingUp ◄┘ (wait until the projection passed it)
 *        └─ reply or refusal ─► turn.verifying ─ nothing newer ──► idle (answer)
 *                                              └ something newer ─► deciding
 *
 * Every I/O step is an invoked promise actor (`append`, `verify`, `catchUp`),
 * so leaving a state — or stopping the actor — cancels it; the turn as a
 * whole has a deadline (`after`), past which it answers UNAVAILABLE. Lease
 * expiry is never a timer here: it is arithmetic on the decision's instant.
 */
import { assign, fromPromise, setup, type ActorRefFrom } from "xstate";
import { LogUnavailableError, msgIdVariant, WrongLastSequenceError, type AppendResult, type EventEnvelope } from "../events/index.ts";
import type { ProjectionRecord } from "../projections/index.ts";
import type { Command } from "./actor-logic.ts";
import type { Decision } from "./decision.ts";
import { unavailable, type TurnResult } from "./turn-result.ts";

/** One command waiting for, or taking, its turn. */
export interface PendingCommand {
  readonly command: Command;
  readonly requestId: string | undefined;
  /** When a durable command was first sent (epoch ms): a reply remembered since then answers it. */
  readonly requestedAt: number | undefined;
  /** `Nats-Msg-Id` of the event this command may append (stable across retries). */
  readonly msgId: string;
  /** The instant on the runtime's timer clock by which the command must be answered. */
  readonly deadline: number;
  readonly resolve: (result: TurnResult) => void;
}

/** An event ready to append: its envelope and the exact bytes (a retry sends the same ones). */
export interface EncodedEvent {
  readonly envelope: EventEnvelope;
  readonly payload: Uint8Array;
}

/** The synchronous parts of a turn, implemented by the runtime (faked in the machine's own tests). */
export interface TurnPorts {
  /** The decision clock (epoch ms): injected, simulated in tests. */
  now(): number;
  /** The timer clock deadlines are measured on (ms). */
  monotonic(): number;
  /** The id's record in its kind's projection. */
  record(id: string): ProjectionRecord<unknown>;
  /** A reply remembered for `msgId` at or after `since`, if any. */
  remembered(msgId: string, since: number): { reply: unknown } | undefined;
  decide(state: unknown, command: Command, now: number): Decision;
  /** The event a decision records, stamped with the decision's instant. */
  encode(id: string, decision: Decision, now: number, requestId: string | undefined): EncodedEvent;
  /** Applies this turn's own acknowledged event to the projection and returns the reply it owes. */
  applyOwn(id: string, base: ProjectionRecord<unknown>, event: EncodedEvent, seq: number, msgId: string): unknown;
  /** Where this turn's own event was found in the stream (by any folder), with its reply. */
  replyRecordedFor(msgId: string): { reply: unknown } | undefined;
  watch(msgId: string): void;
  unwatch(msgId: string): void;
  /** The actor is idle with nothing queued: the runtime may stop it. */
  idle(id: string): void;
  /** How long a requestId is remembered (the dedup window). */
  readonly dedupWindowMs: number;
  /** Decisions per command before giving up under contention. */
  readonly maxAttempts: number;
}

/** What the append step is given. */
export interface AppendInput {
  readonly id: string;
  readonly event: EncodedEvent;
  readonly expectedSeq: number;
  readonly msgId: string;
  /** The command's op and requestId, for the runtime's log lines. */
  readonly op: string;
  readonly requestId: string | undefined;
  readonly timeoutMs: number;
}

/** What the verify and catch-up steps are given: wait until the projection holds `seq` (0: the last on the actor's subject). */
export interface CatchUpInput {
  readonly id: string;
  readonly seq: number;
  readonly timeoutMs: number;
}

/** The turn in progress. */
export interface Turn {
  readonly pending: PendingCommand;
  /** The record the current decision was taken on. */
  readonly base: ProjectionRecord<unknown>;
  /** The instant the current decision was taken at. */
  readonly now: number;
  readonly decision: Decision | undefined;
  readonly event: EncodedEvent | undefined;
  readonly attempts: number;
  /** Appends that ended without knowing whether they were stored. */
  readonly uncertain: number;
  /** The message id the next append uses: the request's, or a variant once JetStream held the request's id without the stream holding its event. */
  readonly msgId: string;
  /** The last append was answered "duplicate": if catching up does not find the event, the next attempt takes a variant id. */
  readonly duplicate: boolean;
  /** The stream sequence to wait for before deciding again (0: the kind's last). */
  readonly waitSeq: number;
  /** The answer, once there is one; delivered when the machine is back in idle. */
  readonly result: TurnResult | undefined;
}

/** The machine's context. */
export interface TurnContext {
  readonly ports: TurnPorts;
  readonly id: string;
  readonly queue: readonly PendingCommand[];
  readonly turn: Turn | undefined;
}

/** Events the machine takes from outside. */
export type TurnMachineEvent = { readonly type: "COMMAND"; readonly pending: PendingCommand };

const remaining = (context: TurnContext): number => Math.max(0, context.turn!.pending.deadline - context.ports.monotonic());

/** The error of an invoked step's failure. */
const errorOf = ({ event }: { event: { error: unknown } }): unknown => event.error;

const settle = (turn: Turn, result: TurnResult): Turn => ({ ...turn, result });

/** The actor machine, shared by every kind (the kind's logic is behind the ports). */
export const turnMachine = setup({
  types: {
    context: {} as TurnContext,
    events: {} as TurnMachineEvent,
    input: {} as { ports: TurnPorts; id: string },
  },
  actors: {
    // Placeholders: the runtime provides the real effects with machine.provide().
    append: fromPromise<AppendResult, AppendInput>(() => Promise.reject(new Error("append is not provided"))),
    verify: fromPromise<void, CatchUpInput>(() => Promise.reject(new Error("verify is not provided"))),
    catchUp: fromPromise<void, CatchUpInput>(() => Promise.reject(new Error("catchUp is not provided"))),
  },
  delays: {
    deadline: ({ context }) => remaining(context),
  },
  guards: {
    hasQueue: ({ context }) => context.queue.length > 0,
    answered: ({ context }) => context.turn?.result !== undefined,
    wantsAppend: ({ context }) => context.turn?.decision?.outcome === "append",
    baseUnchanged: ({ context }) => context.ports.record(context.id).seq === context.turn!.base.seq,
    duplicate: (_, ack: AppendResult) => ack.duplicate,
    conflict: (_, error: unknown) => error instanceof WrongLastSequenceError,
    lostAck: (_, error: unknown) => error instanceof LogUnavailableError && error.ambiguous,
    firstLostAck: ({ context }, error: unknown) => error instanceof LogUnavailableError && error.ambiguous && context.turn!.uncertain === 0,
    replyRecorded: ({ context }) => context.ports.replyRecordedFor(context.turn!.pending.msgId) !== undefined,
    outOfAttempts: ({ context }) => context.turn!.attempts >= context.ports.maxAttempts,
  },
  actions: {
    enqueue: assign({ queue: ({ context, event }) => [...context.queue, event.pending] }),
    takeNext: assign(({ context }) => {
      const [pending, ...queue] = context.queue;
      const turn: Turn = {
        pending: pending!,
        base: { state: undefined, seq: 0, atMs: 0 },
        now: 0,
        decision: undefined,
        event: undefined,
        attempts: 0,
        uncertain: 0,
        msgId: pending!.msgId,
        duplicate: false,
        waitSeq: 0,
        result: undefined,
      };
      return { queue, turn };
    }),
    decide: assign({
      turn: ({ context }) => {
        const { ports, id } = context;
        const turn = context.turn!;
        const { pending } = turn;
        if (ports.monotonic() >= pending.deadline) return settle(turn, unavailable("the request waited past its deadline for its turn", 0));
        const base = ports.record(id);
        const now = Math.max(ports.now(), base.atMs);
        if (pending.requestId !== undefined) {
          const remembered = ports.remembered(pending.msgId, pending.requestedAt ?? now - ports.dedupWindowMs);
          if (remembered !== undefined) return settle(turn, { ok: true, reply: remembered.reply });
        }
        const decision = ports.decide(base.state, pending.command, now);
        const event = decision.outcome === "append" ? ports.encode(id, decision, now, pending.requestId) : undefined;
        return { ...turn, base, now, decision, event, attempts: turn.attempts + 1 };
      },
    }),
    watchOwn: ({ context }) => context.ports.watch(context.turn!.pending.msgId),
    applyOwn: assign({
      turn: ({ context }, ack: AppendResult) => {
        const turn = context.turn!;
        const reply = context.ports.applyOwn(context.id, turn.base, turn.event!, ack.seq, turn.msgId);
        return settle(turn, { ok: true, reply });
      },
    }),
    waitFor: assign({ turn: ({ context }, seq: number) => ({ ...context.turn!, waitSeq: seq, duplicate: false }) }),
    waitForDuplicate: assign({ turn: ({ context }, seq: number) => ({ ...context.turn!, waitSeq: seq, duplicate: true }) }),
    // The id is held by JetStream's duplicate window but no event carries it: try again under a variant.
    renewMsgId: assign({
      turn: ({ context }) => {
        const turn = context.turn!;
        return turn.duplicate ? { ...turn, duplicate: false, msgId: msgIdVariant(turn.pending.msgId, turn.attempts) } : turn;
      },
    }),
    noteLostAck: assign({ turn: ({ context }) => ({ ...context.turn!, uncertain: context.turn!.uncertain + 1, waitSeq: 0 }) }),
    answerDecision: assign({
      turn: ({ context }) => {
        const turn = context.turn!;
        const decision = turn.decision!;
        if (decision.outcome === "reject") return settle(turn, { ok: false, rejection: decision.rejection });
        return settle(turn, { ok: true, reply: decision.outcome === "reply" ? decision.reply : undefined });
      },
    }),
    answerFound: assign({
      turn: ({ context }) => settle(context.turn!, { ok: true, reply: context.ports.replyRecordedFor(context.turn!.pending.msgId)!.reply }),
    }),
    answerUnavailable: assign({
      turn: ({ context }, error: unknown) => {
        const turn = context.turn!;
        const why =
          error instanceof Error
            ? error.message
            : turn.uncertain > 0
              ? "the event stream did not acknowledge the append"
              : `gave up after ${turn.attempts} conflicting attempts`;
        return settle(turn, unavailable(why, 250));
      },
    }),
    answerTimedOut: assign({
      turn: ({ context }) => {
        const turn = context.turn!;
        const unsure = turn.event !== undefined && turn.uncertain > 0;
        const why = unsure
          ? "no answer from the event stream in time; the command may have been recorded: retry with the same requestId"
          : "no answer from the event stream in time";
        return settle(turn, unavailable(why, 1000));
      },
    }),
    deliver: ({ context }) => {
      const turn = context.turn;
      if (turn !== undefined) {
        context.ports.unwatch(turn.pending.msgId);
        turn.pending.resolve(turn.result ?? unavailable("the turn ended without an answer", 0));
      }
      if (context.queue.length === 0) context.ports.idle(context.id);
    },
    clearTurn: assign({ turn: undefined }),
  },
}).createMachine({
  id: "actor",
  context: ({ input }) => ({ ports: input.ports, id: input.id, queue: [], turn: undefined }),
  initial: "idle",
  on: { COMMAND: { actions: "enqueue" } },
  states: {
    idle: {
      entry: ["deliver", "clearTurn"],
      always: { guard: "hasQueue", target: "turn" },
    },
    turn: {
      entry: "takeNext",
      after: { deadline: { target: "idle", actions: "answerTimedOut" } },
      initial: "deciding",
      states: {
        deciding: {
          entry: "decide",
          always: [{ guard: "answered", target: "#actor.idle" }, { guard: "wantsAppend", target: "appending" }, { target: "verifying" }],
        },
        appending: {
          entry: "watchOwn",
          invoke: {
            src: "append",
            input: ({ context }) => {
              const turn = context.turn!;
              return {
                id: context.id,
                event: turn.event!,
                expectedSeq: turn.base.seq,
                msgId: turn.msgId,
                op: turn.pending.command.op,
                requestId: turn.pending.requestId,
                timeoutMs: remaining(context),
              };
            },
            onDone: [
              // Our message id was stored already (a retry after a lost ack): find where, then answer from it.
              {
                guard: { type: "duplicate", params: ({ event }) => event.output },
                target: "catchingUp",
                actions: { type: "waitForDuplicate", params: ({ event }) => event.output.seq },
              },
              { target: "#actor.idle", actions: { type: "applyOwn", params: ({ event }) => event.output } },
            ],
            onError: [
              // Someone else wrote: wait until the projection has their event, then decide again.
              {
                guard: { type: "conflict", params: errorOf },
                target: "catchingUp",
                actions: {
                  type: "waitFor",
                  params: ({ event }: { event: { error: unknown } }) => (event.error as WrongLastSequenceError).actual ?? 0,
                },
              },
              // The ack was lost: publish again with the same message id and expected
              // sequence. JetStream stores it at most once, so this settles the question.
              { guard: { type: "firstLostAck", params: errorOf }, target: "appending", reenter: true, actions: "noteLostAck" },
              { guard: { type: "lostAck", params: errorOf }, target: "catchingUp", actions: "noteLostAck" },
              { target: "#actor.idle", actions: { type: "answerUnavailable", params: errorOf } },
            ],
          },
        },
        verifying: {
          // A reply or refusal is answered only once the projection is known to hold the subject's last event.
          invoke: {
            src: "verify",
            input: ({ context }) => ({ id: context.id, seq: 0, timeoutMs: remaining(context) }),
            onDone: [{ guard: "baseUnchanged", target: "#actor.idle", actions: "answerDecision" }, { target: "deciding" }],
            onError: { target: "#actor.idle", actions: { type: "answerUnavailable", params: errorOf } },
          },
        },
        catchingUp: {
          invoke: {
            src: "catchUp",
            input: ({ context }) => ({ id: context.id, seq: context.turn!.waitSeq, timeoutMs: remaining(context) }),
            onDone: [
              { guard: "replyRecorded", target: "#actor.idle", actions: "answerFound" },
              { guard: "outOfAttempts", target: "#actor.idle", actions: { type: "answerUnavailable", params: () => undefined } },
              { target: "deciding", actions: "renewMsgId" },
            ],
            onError: { target: "#actor.idle", actions: { type: "answerUnavailable", params: errorOf } },
          },
        },
      },
    },
  },
});

/** A running actor. */
export type TurnActor = ActorRefFrom<typeof turnMachine>;
