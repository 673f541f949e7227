/** The route endpoints: `route.acquire|move|candidates|pin|unpin|release|get|snapshot`. */
import { compareCodeUnits } from "../contract/code-units.ts";
import { OPERATOR_OP, SizedAnswer, endpoint, readEndpoint, type Endpoint } from "../transport/endpoint.ts";
import type { RoutePlacement } from "./placement.ts";
import { routeRequests } from "./requests.ts";
import { routeLeaseView, sortedLeases } from "./state.ts";
import type { RouteTable } from "./table.ts";

/**
 * The fewest bytes one lease takes in `route.snapshot`'s JSON: its keys, a
 * one-character route and host, two instants and a comma
 * (test/transport/whole-table-bounds.unit.test.ts checks it against the real thing).
 */
export const MIN_ROUTE_LEASE_BYTES = 100;

/** What the route endpoints use. */
export interface RouteEndpointDeps {
  readonly placement: RoutePlacement;
  readonly routes: RouteTable;
}

/** `route.acquire|move|candidates|pin|unpin|release|get|snapshot`. */
export function routeEndpoints({ placement, routes }: RouteEndpointDeps): Endpoint[] {
  const fresh = () => routes.fresh();
  return [
    endpoint("route", "acquire", routeRequests.acquire, (r, a) =>
      placement.acquire({ route: r.route, fp: r.fp, model: r.model, candidates: r.candidates }, a),
    ),
    endpoint(
      "route",
      "move",
      routeRequests.move,
      (r, a) => placement.command(r.route, { op: "move", fp: r.fp, model: r.model, host: r.host }, a),
      OPERATOR_OP,
    ),
    endpoint("route", "candidates", routeRequests.candidates, (r, a) =>
      placement.command(r.route, { op: "candidates", hosts: r.hosts }, a),
    ),
    endpoint("route", "pin", routeRequests.pin, (r, a) => placement.command(r.route, { op: "pin", host: r.host }, a), OPERATOR_OP),
    endpoint("route", "unpin", routeRequests.unpin, (r, a) => placement.command(r.route, { op: "unpin" }, a), OPERATOR_OP),
    endpoint("route", "release", routeRequests.release, (r, a) => placement.command(r.route, { op: "release" }, a), OPERATOR_OP),
    readEndpoint("route", "get", routeRequests.get, fresh, (r) => {
      const state = routes.get(r.route);
      return { pinned: state.pinned, leases: sortedLeases(state).map((l) => routeLeaseView(r.route, l)) };
    }),
    readEndpoint("route", "snapshot", routeRequests.snapshot, fresh, () => {
      const all = [...routes.routes()];
      const leases = all.reduce((n, [, state]) => n + state.leases.size, 0);
      // Sorted only when built: an answer refused for its size costs the count alone.
      return new SizedAnswer(leases * MIN_ROUTE_LEASE_BYTES, "route.get, one route at a time", () => ({
        leases: all
          .sort(([a], [b]) => compareCodeUnits(a, b))
          .flatMap(([route, state]) => sortedLeases(state).map((l) => routeLeaseView(route, l))),
      }));
    }),
  ];
}
