/**
 * Deliberately broken runtimes for the mutation checks: each must make the
 * simulation fail at its default settings. They are injected through the
 * simulation's own seams (the kind logic an actor host registers, the
 * writer's append options); the turn that never times out replaces the turn
 * machine's deadline (see turn-timeout.mutant.sim.test.ts).
 */
import type { KindLogic, Command } from "../../../src/actors/kind-logic.ts";
import type { Decision } from "../../../src/actors/kind-logic.ts";
import type { EventEnvelope } from "../../../src/events/envelope.ts";
import type { ProxyState } from "../../../src/proxy/state.ts";
import type { LogicMutation, Mutation } from "./sim-cluster.ts";

/** Wraps one kind's decider, leaving the other kinds as they are. */
function mutateDecider(
  kind: string,
  decide: (state: unknown, command: Command, now: number, real: KindLogic<unknown, Command>["decide"]) => Decision,
): LogicMutation {
  return <S, C extends Command, E extends EventEnvelope>(logic: KindLogic<S, C, E>): KindLogic<S, C, E> => {
    if (logic.kind !== kind) return logic;
    const real = logic.decide.bind(logic) as unknown as KindLogic<unknown, Command>["decide"];
    return { ...logic, decide: (state, command, now) => decide(state, command, now, real) as Decision<E> };
  };
}

/** A proxy decider that skips the cap check: a grant is decided as if the proxy had no limit. */
export const proxySkipsCapCheck: Mutation = {
  logic: mutateDecider("proxy", (state, command, now, real) => {
    const proxy = state as ProxyState;
    if (command.op !== "grant" || proxy.registration === null) return real(state, command, now);
    return real({ ...proxy, registration: { ...proxy.registration, maxLeases: Number.MAX_SAFE_INTEGER } }, command, now);
  }),
};

/** A lock that forgets to bump the generation: an acquisition records the generation it found. */
export const lockKeepsGeneration: Mutation = {
  logic: mutateDecider("lock", (state, command, now, real) => {
    const decision = real(state, command, now);
    if (decision.outcome !== "append" || decision.type !== "LockAcquired") return decision;
    const data = decision.data as { generation: number };
    return { ...decision, data: { ...data, generation: data.generation - 1 } };
  }),
};

/** A runtime that appends without the expected last subject sequence (its writes no longer exclude each other). */
export const appendsWithoutExpectedSeq: Mutation = { log: { ignoreExpectedSeq: true } };
