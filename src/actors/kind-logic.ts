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
import {
  type EventObject,
  type ActorScope,
  type AnyStateMachine,
  type MachineContext,
  emit,
  fromTransition,
  type ActorSystem,
} from "xstate";
import { isUnparsable, type EventEnvelope, type HistoryEntry, type RecordedEvent } from "../events/envelope.ts";
import type { ErrorCode, Rejection } from "../contract/errors.ts";
import type { KindFold } from "../projections/kind-fold.ts";

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

/** The transition a kind's logic offers, as XState's `KindLogic.transition` has it (snapshot, event, scope with `emit`). */
export interface TransitionLogic<Snap extends { readonly context: unknown }> {
  transition(snapshot: Snap, event: never, scope: { emit(event: never): void }): Snap;
  /** The same transition from context to context, where the logic offers it (a flat machine): no snapshot objects made. */
  transitionContext?(context: Snap["context"], event: never, scope: { emit(event: never): void }): Snap["context"];
}

/** How to build a kind's {@link KindLogic} from its XState logic. */
export interface FromXStateOptions<State, Snap extends { readonly context: State }> {
  readonly kind: KindLogic<State, Command>["kind"];
  readonly foldVersion: number;
  readonly logic: TransitionLogic<Snap>;
  /** The snapshot whose context is `state` (the runtime and projections keep contexts). */
  readonly snapshotOf: (state: State) => Snap;
  readonly initialState: (id: string) => State;
  /** Event types the kind writes; any other is given to the logic as `"foreign"`. */
  readonly eventTypes: ReadonlySet<string>;
  readonly replyFor: KindLogic<State, Command>["replyFor"];
  readonly lateReply?: KindLogic<State, Command>["lateReply"];
  readonly reviveState?: KindLogic<State, Command>["reviveState"];
  /** The state as a projection snapshot keeps it, when that differs from the state in memory (`reviveState` reads it back). */
  readonly persistedContext?: (state: State) => State;
}

/** The kind's logic as the runtime and the projections use it: decide and evolve are each one transition. */
export function fromXState<State, C extends Command, E extends EventEnvelope, Snap extends { readonly context: State }>(
  options: FromXStateOptions<State, Snap>,
): KindLogic<State, C, E> {
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
 * How a projection snapshot keeps the kind's states: each state's context
 * (in the form `persistedContext` gives, where it differs from the state in
 * memory), not XState's persisted snapshot around it. A snapshot of the
 * logic is a function of its context (`snapshotOf`: a flat machine reads its
 * state value from the context, and has no children or history), so
 * `getPersistedSnapshot(snapshotOf(state))` gives XState's form back from a
 * kept record. Kept around each state, that form's four more objects took
 * over a quarter of the CPU of a start from snapshots (bench/README.md, "A start").
 */
function persistence<State>(
  options: Pick<FromXStateOptions<State, { readonly context: State }>, "persistedContext" | "reviveState">,
): Pick<KindLogic<State, Command>, "serializeState" | "reviveState"> {
  const { persistedContext, reviveState } = options;
  return {
    ...(persistedContext === undefined ? {} : { serializeState: persistedContext }),
    ...(reviveState === undefined ? {} : { reviveState }),
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

/*
 * What a decider answers: refuse (a contract error), reply without recording
 * anything, or record one event. Deciders are pure: state + command + now in,
 * decision out.
 */

/** A decision to record one event of the union `E`: its type and the data that type carries. */
export type Append<E extends EventEnvelope = EventEnvelope> = E extends EventEnvelope
  ? { readonly outcome: "append"; readonly type: E["type"]; readonly data: E["data"] }
  : never;

/** A decider's answer to one command; `E` is the kind's event union, so an event's fields are checked where it is decided. */
export type Decision<E extends EventEnvelope = EventEnvelope> =
  { readonly outcome: "reject"; readonly rejection: Rejection } | { readonly outcome: "reply"; readonly reply: unknown } | Append<E>;

/** Builds a rejection decision. */
export function reject(code: ErrorCode, message: string, details?: Record<string, unknown>): Decision<never> {
  return { outcome: "reject", rejection: details === undefined ? { code, message } : { code, message, details } };
}

/** Builds a reply-only decision (nothing is recorded). */
export function replyOnly(reply: unknown): Decision<never> {
  return { outcome: "reply", reply };
}

/**
 * A typed `record` for the event union `E`: `recorder<LockEvent>()("LockAcquired", data)`
 * only compiles when `data` is what a `LockAcquired` carries.
 */
export function recorder<E extends EventEnvelope>() {
  return <T extends E["type"]>(type: T, data: Extract<E, { readonly type: T }>["data"]): Decision<E> =>
    ({ outcome: "append", type, data }) as unknown as Append<E>;
}

/*
 * XState actor logic for a flat machine, run from the machine's own
 * transition table without XState's interpreter.
 *
 * Why: a lock command is one transition on the request path, and a stream
 * follower folds one transition per event. XState's `machine.transition`
 * resolves a general statechart (state node sets, history, microsteps,
 * deferred actions): measured here, 3–5 µs and about 8 KB per transition on
 * a three-state machine, as much garbage as the rest of a request. A flat
 * machine — atomic states under the root, guarded transitions, `assign` and
 * `emit` actions, no entry/exit/always/after/invoke — needs none of that: pick
 * the first enabled transition of the state (then of the root), apply its
 * actions in order, move to its target. That is what this does, from the
 * machine's own definition (`setup({ guards, actions }).createMachine`), so
 * the machine stays the one description of the kind; the tests check it
 * against XState's own `transition` over generated paths.
 *
 * {@link compileFlatMachine} refuses, when the logic is built, any machine
 * that uses something outside that subset, so a later edit of the machine
 * cannot silently run differently here.
 */

/** A flat machine's snapshot: the active state's key and the context (what the runtime keeps per id is the context). */
export interface FlatSnapshot<TContext> {
  readonly status: "active";
  readonly output: undefined;
  readonly error: undefined;
  readonly value: string;
  readonly context: TContext;
}

/** The parts of XState's `KindLogic` interface a flat machine implements. */
export interface FlatMachineLogic<TContext, TEvent extends EventObject, TInput> {
  /** XState's `KindLogic.transition`: the next snapshot; emitted events go to `scope.emit`. */
  transition(snapshot: FlatSnapshot<TContext>, event: TEvent, scope: Pick<ActorScope<never, TEvent>, "emit">): FlatSnapshot<TContext>;
  /**
   * The same transition from context to context, for callers that keep
   * contexts only (the runtime and the projections): no snapshot object in
   * or out, which a fold of a million events would make and drop twice each.
   */
  transitionContext(context: TContext, event: TEvent, scope: Pick<ActorScope<never, TEvent>, "emit">): TContext;
  /**
   * A command's transition for its decision alone: the first enabled
   * transition's {@link decision} action called directly (undefined when no
   * transition is enabled). Commands never change the context, so this is the
   * whole transition, in two frames from the caller to the kind's decider.
   */
  decideContext(context: TContext, event: TEvent): Decision | undefined;
  /** XState's `KindLogic.getInitialSnapshot`. */
  getInitialSnapshot(scope: unknown, input: TInput): FlatSnapshot<TContext>;
  /** XState's `KindLogic.getPersistedSnapshot`: the form XState's own machine restores from. */
  getPersistedSnapshot(snapshot: FlatSnapshot<TContext>): PersistedFlatSnapshot<TContext>;
  /** The snapshot of a context, its state read from the context (the runtime keeps contexts only). */
  readonly snapshotOf: (context: TContext) => FlatSnapshot<TContext>;
  /** The machine this logic runs. */
  readonly machine: AnyStateMachine;
}

/** XState's persisted snapshot of a machine without children or history. */
export interface PersistedFlatSnapshot<TContext> {
  readonly status: "active";
  readonly value: string;
  readonly context: TContext;
  readonly children: Record<string, never>;
  readonly historyValue: Record<string, never>;
}

type Args = { readonly context: unknown; readonly event: EventObject };
type Guard = (args: Args) => boolean;
type Scope = Pick<ActorScope<never, never>, "emit">;
type Step = (context: unknown, event: EventObject, scope: Scope) => unknown;
type Decider = (context: unknown, event: EventObject, settings: unknown) => Decision;

/** Marks a {@link decision} action with its decider and settings, so the compiled runner calls the decider itself. */
const DECIDER = Symbol("decider");

/**
 * A command's action: emits the decision `decide(context, event, settings)`
 * as `{type: "decided", decision}` (what {@link fromXState} captures). XState
 * runs it as the `emit` action it is; the flat runner calls `decide` directly
 * from the transition ({@link FlatMachineLogic.decideContext}).
 */
export function decision<TContext extends MachineContext, TEvent extends EventObject, E extends EventEnvelope, S = undefined>(
  decide: (context: TContext, event: TEvent, settings: S) => Decision<E>,
  ...settings: S extends undefined ? [] : [S]
) {
  const bound = settings[0] as S;
  const action = emit<TContext, TEvent, undefined, TEvent, DecidedEvent<E>>(({ context, event }) => ({
    type: "decided",
    decision: decide(context, event, bound),
  }));
  return Object.assign(action, { [DECIDER]: { decide: decide as unknown as Decider, settings: bound } });
}

interface CompiledTransition {
  readonly guard: Guard | undefined;
  readonly steps: readonly Step[];
  /** The decider of a transition whose one action is a {@link decision}, and what it is given besides context and event. */
  readonly decider: Decider | undefined;
  readonly deciderSettings: unknown;
  /** The state key it moves to; undefined: it stays. */
  readonly target: string | undefined;
}

/** Per state key, per event type: the candidate transitions in XState's order (the state's, then the root's). */
type Table = ReadonlyMap<string, ReadonlyMap<string, readonly CompiledTransition[]>>;

/**
 * Builds the logic of `machine`, a flat machine whose active state is always
 * `valueOf(context)` (the machine's transitions keep that true; the tests
 * check it on every generated path).
 */
export function compileFlatMachine<TContext, TEvent extends EventObject, TInput>(
  machine: AnyStateMachine,
  options: { readonly valueOf: (context: TContext) => string; readonly initialContext: (input: TInput) => TContext },
): FlatMachineLogic<TContext, TEvent, TInput> {
  const table = compileTable(machine);
  const { valueOf } = options;
  const snapshotOf = (context: TContext): FlatSnapshot<TContext> => ({
    status: "active",
    output: undefined,
    error: undefined,
    value: valueOf(context),
    context,
  });
  return {
    machine,
    snapshotOf,
    getInitialSnapshot: (_scope, input) => snapshotOf(options.initialContext(input)),
    getPersistedSnapshot: (snapshot) => ({
      status: "active",
      value: snapshot.value,
      context: snapshot.context,
      children: {},
      historyValue: {},
    }),
    transition(snapshot, event, scope) {
      const t = enabled(table, snapshot.value, snapshot.context, event);
      if (t === undefined) return snapshot;
      const context = applySteps(t, snapshot.context, event, scope);
      if (t.target === undefined && context === snapshot.context) return snapshot;
      return { ...snapshot, value: t.target ?? snapshot.value, context };
    },
    transitionContext(context, event, scope) {
      const t = enabled(table, valueOf(context), context, event);
      return t === undefined ? context : applySteps(t, context, event, scope);
    },
    decideContext(context, event) {
      const t = enabled(table, valueOf(context), context, event);
      if (t === undefined) return undefined;
      if (t.decider !== undefined) return t.decider(context, event, t.deciderSettings);
      // A command transition written with plain actions: run them and take what they emit.
      let decided: Decision | undefined;
      applySteps(t, context, event, { emit: (e: DecidedEvent) => (decided = e.decision) } as unknown as Scope);
      return decided;
    },
  };
}

/** The first enabled transition of `value` on `event` (the state's own candidates, then the root's); undefined: none. */
function enabled(table: Table, value: string, context: unknown, event: EventObject): CompiledTransition | undefined {
  const candidates = table.get(value)?.get(event.type);
  if (candidates === undefined) return undefined;
  const args = { context, event };
  for (const t of candidates) if (t.guard === undefined || t.guard(args)) return t;
  return undefined;
}

/** The context after a transition's actions, in order. */
function applySteps<TContext>(t: CompiledTransition, context: TContext, event: EventObject, scope: Scope): TContext {
  let next: unknown = context;
  for (const step of t.steps) next = step(next, event, scope);
  return next as TContext;
}

/** Marks an `assign` function as returning the whole context (see {@link wholeContext}). */
const WHOLE_CONTEXT = Symbol("wholeContext");

/**
 * Marks an `assign` function that returns the whole next context, every key
 * of it, not a part to merge: XState merges it into the context, which gives
 * an equal object, and this runner takes it as it is instead of copying it
 * once more (one object of the context's size per folded event). A key left
 * out would make the two differ, which the tests comparing this runner with
 * XState's own `transition` catch.
 */
export function wholeContext<F extends (...args: never[]) => object>(assignment: F): F {
  return Object.assign(assignment, { [WHOLE_CONTEXT]: true });
}

function compileTable(machine: AnyStateMachine): Table {
  const root = machine.root;
  const refuse = (what: string): never => {
    throw new Error(`machine ${machine.id} is not flat: ${what} (src/actors/kind-logic.ts runs only the flat subset)`);
  };
  if (root.entry.length > 0 || root.exit.length > 0 || root.always !== undefined || root.invoke.length > 0 || root.after.length > 0) {
    refuse("the root has entry, exit, always, after or invoke");
  }
  const compile = (definitions: readonly unknown[]): CompiledTransition[] =>
    definitions.map((d) => compileTransition(machine, d as TransitionDefinition, refuse));
  const rootOn = new Map<string, CompiledTransition[]>();
  for (const [type, definitions] of root.transitions) {
    if (type.includes("*")) refuse(`a wildcard transition (${type})`);
    rootOn.set(type, compile(definitions));
  }
  const table = new Map<string, Map<string, CompiledTransition[]>>();
  for (const [key, node] of Object.entries(root.states)) {
    if (Object.keys(node.states).length > 0) refuse(`state ${key} has child states`);
    if (node.entry.length > 0 || node.exit.length > 0 || node.always !== undefined || node.invoke.length > 0 || node.after.length > 0) {
      refuse(`state ${key} has entry, exit, always, after or invoke`);
    }
    const on = new Map<string, CompiledTransition[]>();
    for (const [type, definitions] of node.transitions) {
      if (type.includes("*")) refuse(`a wildcard transition (${type}) in ${key}`);
      // XState falls back to the parent when none of a state's own candidates is enabled.
      on.set(type, [...compile(definitions), ...(rootOn.get(type) ?? [])]);
    }
    for (const [type, candidates] of rootOn) if (!on.has(type)) on.set(type, candidates);
    table.set(key, on);
  }
  return table;
}

/** What XState's transition definitions hold that this reads. */
interface TransitionDefinition {
  readonly guard?: unknown;
  readonly actions: readonly unknown[];
  readonly target?: readonly { readonly key: string; readonly parent?: { readonly parent?: unknown } }[] | undefined;
}

function compileTransition(machine: AnyStateMachine, d: TransitionDefinition, refuse: (what: string) => never): CompiledTransition {
  const implementations = machine.implementations as { guards: Record<string, unknown>; actions: Record<string, unknown> };
  let guard: Guard | undefined;
  if (d.guard !== undefined) {
    const ref = typeof d.guard === "string" ? implementations.guards[d.guard] : d.guard;
    if (typeof ref !== "function" || "check" in ref) refuse(`guard ${JSON.stringify(d.guard)} is not a plain guard function`);
    guard = ref as Guard;
  }
  const actions = d.actions.map((action) => (typeof action === "string" ? implementations.actions[action] : action));
  const steps = actions.map((action) => compileAction(action, refuse));
  const targets = d.target ?? [];
  if (targets.length > 1) refuse("a transition with several targets");
  const target = targets[0];
  if (target !== undefined && target.parent?.parent !== undefined) refuse(`target ${target.key} is not a top-level state`);
  const marked = actions.length === 1 ? (actions[0] as { [DECIDER]?: { decide: Decider; settings: unknown } })[DECIDER] : undefined;
  // A decision's transition stays where it is: the decider alone is the whole of it.
  const decider = marked !== undefined && target === undefined ? marked : undefined;
  return { guard, steps, target: target?.key, decider: decider?.decide, deciderSettings: decider?.settings };
}

/** One `assign` or `emit` action as a step from context to context. */
function compileAction(action: unknown, refuse: (what: string) => never): Step {
  const a = action as { type?: string; assignment?: unknown; event?: unknown } | undefined;
  if (a?.type === "xstate.assign") {
    const assignment = a.assignment;
    if (typeof assignment === "function") {
      const assigner = assignment as ((args: Args) => object) & { [WHOLE_CONTEXT]?: true };
      if (assigner[WHOLE_CONTEXT] === true) return (context, event) => assigner({ context, event });
      return (context, event) => ({ ...(context as object), ...assigner({ context, event }) });
    }
    const assigners = Object.entries(assignment as Record<string, unknown>);
    return (context, event) => {
      const partial: Record<string, unknown> = {};
      for (const [key, value] of assigners) {
        partial[key] = typeof value === "function" ? (value as (args: Args) => unknown)({ context, event }) : value;
      }
      return { ...(context as object), ...partial };
    };
  }
  if (a?.type === "xstate.emit") {
    const emitted = a.event;
    return (context, event, scope) => {
      scope.emit((typeof emitted === "function" ? (emitted as (args: Args) => EventObject)({ context, event }) : emitted) as never);
      return context;
    };
  }
  return refuse(`action ${a?.type ?? String(action)} is neither assign nor emit`);
}

/*
 * What the runtime needs to know about one kind of actor: its fold (initial
 * state, evolve, fold version, and how to answer a command from the event it
 * recorded — also a repeated `requestId`'s answer) and its pure decider.
 */

/** A command as the runtime sees it: an operation name plus its fields. */
export interface Command {
  readonly op: string;
}

/** The pure parts of one kind of actor; `E` is the kind's event union. */
export interface KindLogic<State, Cmd extends Command, E extends EventEnvelope = EventEnvelope> extends KindFold<State> {
  /** Decides one command at instant `now` (epoch ms). */
  decide(state: State, command: Cmd, now: number): Decision<E>;
  /**
   * Whether `reply`, remembered for the command's `requestId`, answers this
   * repeat of it (default: always); a reply that only says where a wait
   * stands does not answer a repeat that may not wait, which is decided.
   */
  answersRepeat?(reply: unknown, command: Cmd): boolean;
  /**
   * For a holder-bound command (docs/protocol.md, "Principals"), the
   * principal that created the lease or session it acts on (`""`: created
   * without one); undefined for any other command, or when there is nothing
   * to act on.
   */
  holderOf?(state: State, command: Cmd, now: number): string | undefined;
}

/*
 * The XState logic of a kind whose behaviour is data rather than a
 * lifecycle (proxies, hosts, routes): `fromTransition` over its pure decider
 * and fold. A command emits the decision and leaves the state; a recorded
 * entry is folded.
 */

/** `fromTransition` logic deciding with `decide` and folding with `evolve`; its input names the id. */
export function decideAndFold<State, C extends Command, E extends EventEnvelope>(parts: {
  readonly decide: (state: State, command: C, now: number) => Decision<E>;
  readonly evolve: (state: State, entry: HistoryEntry) => State;
  readonly initialState: (id: string) => State;
}) {
  return fromTransition<State, KindEvent<C>, ActorSystem<{ actors: Record<string, never> }>, { readonly id: string }, DecidedEvent<E>>(
    (state, event, scope) => {
      if (isRecordedEntry(event)) return parts.evolve(state, event.entry);
      scope.emit({ type: "decided", decision: parts.decide(state, event.command, event.now) });
      return state;
    },
    ({ input }) => parts.initialState(input.id),
  );
}
