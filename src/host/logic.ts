/** The host actor's logic: XState `fromTransition` logic over the host decider and the host fold. */
import type { KindLogic } from "../actors/kind-logic.ts";
import { hostEventSchemas, type HostEvent } from "./events.ts";
import { eventTypesOf } from "../events/kind-events.ts";
import { type RecordedEvent } from "../events/envelope.ts";
import { evolveHost, initialHostState, type HostState } from "./state.ts";
import { decideAndFold } from "../actors/kind-logic.ts";
import { fromXState, transitionSnapshotOf } from "../actors/kind-logic.ts";
import type { HostCommand } from "./commands.ts";
import { decideHost } from "./decide.ts";

/** The host actor logic (hosts have no server settings). */
export function hostLogic(): KindLogic<HostState, HostCommand> {
  return fromXState({
    kind: "host",
    // 2: the state holds the capacity and the open admissions.
    // 3: snapshots keep XState's persisted snapshot of each state (src/actors/kind-logic.ts, persistence).
    // 4: ids decode exactly (a snapshot from an older fold may hold two ids under one key).
    // 5: snapshots keep each state, not XState's persisted snapshot around it (src/actors/kind-logic.ts, persistence).
    foldVersion: 5,
    logic: hostMachineLogic(),
    snapshotOf: transitionSnapshotOf<HostState>,
    initialState: initialHostState,
    eventTypes: HOST_EVENT_TYPES,
    // An admission answers its own stream sequence: the route's placement names it.
    replyFor: (state, recorded) => hostReply(state.host, recorded),
    // The host's name is all of the state a reply reads.
    lateReply: { fits: () => true, render: hostReply },
  });
}

/** The host's XState logic: `fromTransition` over its decider and fold. */
export function hostMachineLogic() {
  return decideAndFold<HostState, HostCommand, HostEvent>({
    decide: (state, command) => decideHost(state, command),
    evolve: evolveHost,
    initialState: initialHostState,
  });
}

/** The reply owed to `recorded`, an entry of host `host`'s history. */
function hostReply(host: string, recorded: RecordedEvent): unknown {
  return recorded.event.type === "HostLeaseAdmitted" ? { host, admission: recorded.seq } : { host };
}

const HOST_EVENT_TYPES = eventTypesOf(hostEventSchemas);
