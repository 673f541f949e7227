/** The route actor's logic: the route projection plus the route decider. */
import type { ActorLogic } from "../actor-logic.ts";
import { isRouteEvent } from "../../events/index.ts";
import { evolveRoute, initialRouteState, leaseKey, reviveRouteState, type RouteState } from "../../projections/route.ts";
import type { RouteCommand, RouteSettings } from "./commands.ts";
import { decideRoute } from "./decide.ts";

/** Builds the route actor logic for the given server settings. */
export function routeLogic(settings: RouteSettings): ActorLogic<RouteState, RouteCommand> {
  return {
    kind: "route",
    // 2: the state holds the route's last sequence (host admissions are bound to it).
    foldVersion: 2,
    initialState: initialRouteState,
    evolve: evolveRoute,
    reviveState: reviveRouteState,
    decide: (state, command, now) => decideRoute(state, command, now, settings),
    replyFor: (state, recorded) => {
      const event = recorded.event;
      if (!isRouteEvent(event)) return {};
      switch (event.type) {
        case "RouteLeasePlaced":
          return event.data.reason === "ctx"
            ? { from: event.data.from, host: event.data.host }
            : { host: event.data.host, reused: event.data.reused };
        case "RouteLeaseTouched": {
          // A reuse on a pinned route answers the pin (the seed's rule).
          const host = state.pinned !== "" ? state.pinned : (state.leases.get(leaseKey(event.data.fp, event.data.model))?.host ?? "");
          return { host, reused: true };
        }
        case "RouteReleased":
          return { released: event.data.released.length };
        case "RouteLeaseExpired":
          return { expired: true };
        default:
          return {};
      }
    },
  };
}
