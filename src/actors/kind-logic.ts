/**
 * One kind's behaviour as XState actor logic, and the two uses of it: a
 * command is a transition that emits the kind's decision (and leaves the
 * state as it is: state changes only by recorded events); a recorded event
 * is a transition that folds it. The runtime decides with the first, and the
 * projections, `replay` and `audit` fold with the second, so they all run
 * the one definition.
 *
 * Each use is one transition of the logic: `logic.transition(snapshot,
 * event, scope)` through XState's actor logic interface, or, where the logic
 * offers it (a flat machine), the same transition from context to context,
 * with one scope per kind reused for every call (the emitted decision is
 * captured there): no actor is created, and nothing is interpreted per
 * request.
 */
import type { EventObject } from "xstate";
import { isUnparsable, type EventEnvelope, type HistoryEntry, type RecordedEvent } from "../events/envelope.ts";
import type { ActorLogic, Command } from "./actor-logic.ts";
import type { Decision } from "./decision.ts";

/** A command given to a kind's logic: the command, and the decision's instant (epoch ms). */
export interface CommandEvent<C extends Command = Command> {
  readonly type: C["op"];
  readonly command: C;
  readonly now: number;
}

/**
 * A recorded entry given to a kind's logic to fold. `type` is the event's
 * type; `"unparsable"` for a message that did not parse, `"foreign"` for a
 * type the kind does not write.
 */
export interface RecordedEntryEvent {
  readonly type: string;
  readonly entry: HistoryEntry;
}

/** What a command's transition emits: the kind's decision. */
export interface DecidedEvent<E extends EventEnvelope = EventEnvelope> {
  readonly type: "decided";
  readonly decision: Decision<E>;
}

/** The event a kind's logic takes. */
export type KindEvent<C extends Command = Command> = CommandEvent<C> | RecordedEntryEvent;

/** The transition a kind's logic offers, as XState's `ActorLogic.transition` has it (snapshot, event, scope with `emit`). */
export interface TransitionLogic<Snap extends { readonly context: unknown }> {
  transition(snapshot: Snap, event: never, scope: { emit(event: never): void }): Snap;
  /** The same transition from context to context, where the logic offers it (a flat machine): no snapshot objects made. */
  transitionContext?(context: Snap["context"], event: never, scope: { emit(event: never): void }): Snap["context"];
  /** XState's `ActorLogic.getPersistedSnapshot`: when given, projection snapshots keep this form of each state. */
  getPersistedSnapshot?(snapshot: Snap): unknown;
}

/** How to build a kind's {@link ActorLogic} from its XState logic. */
export interface FromXStateOptions<State, Snap extends { readonly context: State }> {
  readonly kind: ActorLogic<State, Command>["kind"];
  readonly foldVersion: number;
  readonly logic: TransitionLogic<Snap>;
  /** The snapshot whose context is `state` (the runtime and projections keep contexts). */
  readonly snapshotOf: (state: State) => Snap;
  readonly initialState: (id: string) => State;
  /** Event types the kind writes; any other is given to the logic as `"foreign"`. */
  readonly eventTypes: ReadonlySet<string>;
  readonly replyFor: ActorLogic<State, Command>["replyFor"];
  readonly lateReply?: ActorLogic<State, Command>["lateReply"];
  readonly reviveState?: ActorLogic<State, Command>["reviveState"];
  /** The state as its persisted snapshot keeps it, when that differs from the state in memory (`reviveState` reads it back). */
  readonly persistedContext?: (state: State) => State;
}

/** The kind's logic as the runtime and the projections use it: decide and evolve are each one transition. */
export function fromXState<State, C extends Command, E extends EventEnvelope, Snap extends { readonly context: State }>(
  options: FromXStateOptions<State, Snap>,
): ActorLogic<State, C, E> {
  const { logic, snapshotOf, eventTypes } = options;
  // The one scope of this kind: a transition's emitted decision lands here (transitions are synchronous and never nest).
  let decided: Decision<E> | undefined;
  const scope = {
    emit: (event: DecidedEvent<E>) => {
      decided = event.decision;
    },
  };
  const transition = logic.transition.bind(logic) as (snapshot: Snap, event: EventObject, s: typeof scope) => Snap;
  // From context to context: the logic's own where it has one, else through its snapshots.
  const step: (state: State, event: EventObject, s: typeof scope) => State =
    logic.transitionContext === undefined
      ? (state, event, s) => transition(snapshotOf(state), event, s).context
      : (logic.transitionContext.bind(logic) as (state: State, event: EventObject, s: typeof scope) => State);
  return {
    kind: options.kind,
    foldVersion: options.foldVersion,
    initialState: options.initialState,
    replyFor: options.replyFor,
    ...(options.lateReply === undefined ? {} : { lateReply: options.lateReply }),
    ...persistence(options),
    decide(state, command, now) {
      decided = undefined;
      const event: CommandEvent<C> = { type: command.op, command, now };
      step(state, event, scope);
      const decision = decided as Decision<E> | undefined;
      if (decision === undefined) throw new Error(`the ${options.kind} logic decided nothing for ${command.op}`);
      decided = undefined;
      return decision;
    },
    evolve(state, entry) {
      return step(state, recordedEventOf(entry, eventTypes), scope);
    },
  };
}

/**
 * How a projection snapshot keeps the kind's states: XState's persisted
 * snapshot of each (`getPersistedSnapshot`, the form `createActor(machine,
 * { snapshot })` restores), its context the state, when the logic offers one;
 * otherwise the states themselves.
 */
function persistence<State, Snap extends { readonly context: State }>(
  options: FromXStateOptions<State, Snap>,
): Pick<ActorLogic<State, Command>, "serializeState" | "reviveState"> {
  const { logic, snapshotOf, reviveState, persistedContext } = options;
  if (logic.getPersistedSnapshot === undefined) return reviveState === undefined ? {} : { reviveState };
  const persisted = logic.getPersistedSnapshot.bind(logic);
  return {
    serializeState: (state) => persisted(snapshotOf(persistedContext === undefined ? state : persistedContext(state))),
    reviveState: (data) => {
      const { context } = data as unknown as { readonly context: State };
      return reviveState === undefined ? context : reviveState(context);
    },
  };
}

/** The event a recorded entry is given to a kind's logic as. */
export function recordedEventOf(entry: HistoryEntry, eventTypes: ReadonlySet<string>): RecordedEntryEvent {
  if (isUnparsable(entry)) return { type: "unparsable", entry };
  return { type: eventTypes.has(entry.event.type) ? entry.event.type : "foreign", entry };
}

/** Is `event` a recorded entry (and not a command)? */
export function isRecordedEntry(event: KindEvent): event is RecordedEntryEvent {
  return "entry" in event;
}

/** The recorded event of an entry that parsed (the logic's fold of a type it writes gets one). */
export function recordedOf(event: RecordedEntryEvent): RecordedEvent {
  return event.entry as RecordedEvent;
}

/** The snapshot XState's `fromTransition` logic keeps, for a context. */
export interface TransitionSnapshotOf<State> {
  readonly status: "active";
  readonly output: undefined;
  readonly error: undefined;
  readonly context: State;
}

/** `state` as the snapshot of a `fromTransition` logic. */
export function transitionSnapshotOf<State>(state: State): TransitionSnapshotOf<State> {
  return { status: "active", output: undefined, error: undefined, context: state };
}
