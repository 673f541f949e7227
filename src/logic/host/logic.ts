/** The host actor's logic: the host projection plus the host decider. */
import type { ActorLogic } from "../actor-logic.ts";
import { evolveHost, initialHostState, type HostState } from "../../projections/host.ts";
import type { HostCommand } from "./commands.ts";
import { decideHost } from "./decide.ts";

/** The host actor logic (hosts have no server settings). */
export function hostLogic(): ActorLogic<HostState, HostCommand> {
  return {
    kind: "host",
    // 2: the state holds the capacity and the open admissions (1.1).
    foldVersion: 2,
    initialState: initialHostState,
    evolve: evolveHost,
    decide: (state, command) => decideHost(state, command),
    // An admission answers its own stream sequence: the route's placement names it.
    replyFor: (state, recorded) =>
      recorded.event.type === "HostLeaseAdmitted" ? { host: state.host, admission: recorded.seq } : { host: state.host },
  };
}
