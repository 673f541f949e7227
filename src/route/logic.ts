/** The route actor's logic: XState `fromTransition` logic over the route decider and the route fold. */
import { chooserNamed } from "./chooser.ts";
import type { RouteChooserName } from "../contract/route-choosers.ts";
import type { KindLogic } from "../actors/kind-logic.ts";
import { isRouteEvent, routeEventSchemas, type RouteEvent } from "./events.ts";
import { eventTypesOf } from "../events/kind-events.ts";
import { type RecordedEvent } from "../events/envelope.ts";
import { decideAndFold } from "../actors/kind-logic.ts";
import { fromXState, transitionSnapshotOf } from "../actors/kind-logic.ts";
import { evolveRoute, initialRouteState, leaseKey, reviveRouteState, type RouteState } from "./state.ts";
import type { RouteCommand, RouteSettings } from "./commands.ts";
import { decideRoute } from "./decide.ts";

/** Builds the route actor logic for the given server settings. */
export function routeLogic(settings: RouteSettings): KindLogic<RouteState, RouteCommand> {
  return fromXState({
    kind: "route",
    // 2: the state holds the route's last sequence (host admissions are bound to it).
    // 3: snapshots keep XState's persisted snapshot of each state (src/actors/kind-logic.ts, persistence).
    // 4: ids decode exactly (a snapshot from an older fold may hold two ids under one key).
    // 5: snapshots keep each state, not XState's persisted snapshot around it (src/actors/kind-logic.ts, persistence).
    foldVersion: 5,
    logic: routeMachineLogic(settings),
    snapshotOf: transitionSnapshotOf<RouteState>,
    initialState: initialRouteState,
    eventTypes: ROUTE_EVENT_TYPES,
    reviveState: reviveRouteState,
    replyFor: (state, recorded) => {
      const event = recorded.event;
      if (isRouteEvent(event) && event.type === "RouteLeaseTouched") {
        // A reuse on a pinned route answers the pin (the contract's rule).
        const host = state.pinned !== "" ? state.pinned : (state.leases.get(leaseKey(event.data.fp, event.data.model))?.host ?? "");
        return { host, reused: true };
      }
      return routeEventReply(recorded);
    },
    // A touch answers the route's pin or its lease's host; every other reply reads its event alone.
    lateReply: {
      fits: (_state, recorded) => recorded.event.type !== "RouteLeaseTouched",
      render: (_id, recorded) => routeEventReply(recorded),
    },
  });
}

/** The route's XState logic: `fromTransition` over its decider and fold. */
export function routeMachineLogic(settings: RouteSettings) {
  return decideAndFold<RouteState, RouteCommand, RouteEvent>({
    decide: (state, command, now) => decideRoute(state, command, now, settings),
    evolve: evolveRoute,
    initialState: initialRouteState,
  });
}

/** The reply owed to `recorded`, any route event but a touch. */
function routeEventReply(recorded: RecordedEvent): unknown {
  const event = recorded.event;
  if (!isRouteEvent(event)) return {};
  switch (event.type) {
    case "RouteLeasePlaced":
      return event.data.reason === "ctx"
        ? { from: event.data.from, host: event.data.host }
        : { host: event.data.host, reused: event.data.reused };
    case "RouteReleased":
      return { released: event.data.released.length };
    case "RouteLeaseExpired":
      return { expired: true };
    default:
      return {};
  }
}

const ROUTE_EVENT_TYPES = eventTypesOf(routeEventSchemas);

/** The settings a service's configuration gives route placement: its idle expiry and its chooser, built once from its name. */
export function routeSettingsOf(config: {
  readonly routeIdleMs: number;
  readonly routeChooser: RouteChooserName;
  readonly hashBalanceFactor?: number | undefined;
}): RouteSettings {
  return { routeIdleMs: config.routeIdleMs, chooser: chooserNamed(config.routeChooser, { hashBalanceFactor: config.hashBalanceFactor }) };
}
