/** The host actor's logic: the host projection plus the host decider. */
import type { ActorLogic } from "../actor-logic.ts";
import { evolveHost, initialHostState, type HostState } from "../../projections/host.ts";
import type { HostCommand } from "./commands.ts";
import { decideHost } from "./decide.ts";

/** The host actor logic (hosts have no server settings). */
export function hostLogic(): ActorLogic<HostState, HostCommand> {
  return {
    kind: "host",
    foldVersion: 1,
    initialState: initialHostState,
    evolve: evolveHost,
    decide: (state, command) => decideHost(state, command),
    replyFor: (state) => ({ host: state.host }),
  };
}
