/**
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
import type { ActorScope, AnyStateMachine, EventObject } from "xstate";

/** A flat machine's snapshot: the active state's key and the context (what the runtime keeps per id is the context). */
export interface FlatSnapshot<TContext> {
  readonly status: "active";
  readonly output: undefined;
  readonly error: undefined;
  readonly value: string;
  readonly context: TContext;
}

/** The parts of XState's `ActorLogic` interface a flat machine implements. */
export interface FlatMachineLogic<TContext, TEvent extends EventObject, TInput> {
  /** XState's `ActorLogic.transition`: the next snapshot; emitted events go to `scope.emit`. */
  transition(snapshot: FlatSnapshot<TContext>, event: TEvent, scope: Pick<ActorScope<never, TEvent>, "emit">): FlatSnapshot<TContext>;
  /**
   * The same transition from context to context, for callers that keep
   * contexts only (the runtime and the projections): no snapshot object in
   * or out, which a fold of a million events would make and drop twice each.
   */
  transitionContext(context: TContext, event: TEvent, scope: Pick<ActorScope<never, TEvent>, "emit">): TContext;
  /** XState's `ActorLogic.getInitialSnapshot`. */
  getInitialSnapshot(scope: unknown, input: TInput): FlatSnapshot<TContext>;
  /** XState's `ActorLogic.getPersistedSnapshot`: the form XState's own machine restores from. */
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

interface CompiledTransition {
  readonly guard: Guard | undefined;
  readonly steps: readonly Step[];
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
    throw new Error(`machine ${machine.id} is not flat: ${what} (src/actors/flat-machine.ts runs only the flat subset)`);
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
  const steps = d.actions.map((action) => compileAction(typeof action === "string" ? implementations.actions[action] : action, refuse));
  const targets = d.target ?? [];
  if (targets.length > 1) refuse("a transition with several targets");
  const target = targets[0];
  if (target !== undefined && target.parent?.parent !== undefined) refuse(`target ${target.key} is not a top-level state`);
  return { guard, steps, target: target?.key };
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
