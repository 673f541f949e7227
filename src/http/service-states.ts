/**
 * The folded states the dashboard reads: the service instance's own
 * projections, which follow the whole stream anyway, rather than a second
 * fold of it. A second fold held every lease twice: with 100,000 held locks
 * that was as much heap again as the service's state (bench/README.md,
 * "Idle collection and one fold").
 */
import type { ActorKind } from "../contract/subjects.ts";
import type { HostState } from "../host/state.ts";
import type { LockState } from "../lock/state.ts";
import type { ProxyState } from "../proxy/state.ts";
import type { RouteState } from "../route/state.ts";
import type { SessionState } from "../session/state.ts";

/** One kind's folded states, read-only. */
export interface StateMap<S> {
  /** An id's state; undefined when it has no event. */
  get(id: string): S | undefined;
  values(): Iterable<S>;
}

/** Every kind's folded states, and how far they have folded. */
export interface ServiceStates {
  readonly lock: StateMap<LockState>;
  readonly proxy: StateMap<ProxyState>;
  readonly host: StateMap<HostState>;
  readonly route: StateMap<RouteState>;
  readonly session: StateMap<SessionState>;
  /** The highest stream sequence folded. */
  foldedSeq(): number;
}

/** What a kind's projection offers that {@link StateMap} reads. */
export interface FoldedKind<S> {
  find(id: string): S | undefined;
  states(): Iterable<S>;
}

/** Where each kind's projection is found (the actor runtime is one). */
export interface ProjectionSource {
  projection<S>(kind: ActorKind): FoldedKind<S>;
}

/** The states of the runtime's projections, by kind. */
export function projectionStates(runtime: ProjectionSource, foldedSeq: () => number): ServiceStates {
  const of = <S>(kind: ActorKind): StateMap<S> => {
    const projection = runtime.projection<S>(kind);
    return { get: (id) => projection.find(id), values: () => projection.states() };
  };
  return {
    lock: of<LockState>("lock"),
    proxy: of<ProxyState>("proxy"),
    host: of<HostState>("host"),
    route: of<RouteState>("route"),
    session: of<SessionState>("session"),
    foldedSeq,
  };
}
