/**
 * The XState logic of a kind whose behaviour is data rather than a
 * lifecycle (proxies, hosts, routes): `fromTransition` over its pure decider
 * and fold. A command emits the decision and leaves the state; a recorded
 * entry is folded.
 */
import { fromTransition, type ActorSystem } from "xstate";
import type { EventEnvelope, HistoryEntry } from "../events/envelope.ts";
import type { Command } from "./actor-logic.ts";
import type { Decision } from "./decision.ts";
import { isRecordedEntry, type DecidedEvent, type KindEvent } from "./kind-logic.ts";

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
