/** The host endpoints: `host.set|list`. */
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import { compareCodeUnits } from "../contract/code-units.ts";
import type { HostInfo } from "../contract/messages.ts";
import { OPERATOR_OP, endpoint, readEndpoint, type Endpoint } from "../transport/endpoint.ts";
import type { HostLoads } from "./loads.ts";
import { hostRequests } from "./requests.ts";
import type { HostTable } from "./table.ts";

/** What the host endpoints use; `routes` counts each host's route leases (the route table, which sits above hosts). */
export interface HostEndpointDeps {
  readonly runtime: ActorRuntime;
  readonly hosts: HostTable;
  readonly routes: { fresh(): Promise<void>; activeOn(host: string): number };
  /** The loads hosts publish (`host.list` shows them). */
  readonly loads: HostLoads;
}

/** `host.set|list`. */
export function hostEndpoints({ runtime, hosts, routes, loads }: HostEndpointDeps): Endpoint[] {
  return [
    endpoint(
      "host",
      "set",
      hostRequests.set,
      (r, a) => runtime.execute("host", r.host, { op: "set", healthy: r.healthy, draining: r.draining, maxLeases: r.maxLeases ?? null }, a),
      OPERATOR_OP,
    ),
    readEndpoint(
      "host",
      "list",
      hostRequests.list,
      () => Promise.all([hosts.fresh(), routes.fresh()]),
      (): { hosts: HostInfo[] } => ({
        hosts: [...hosts.snapshot().values()]
          .filter((h) => h.set)
          .sort((a, b) => compareCodeUnits(a.host, b.host))
          .map((h) => ({
            host: h.host,
            healthy: h.healthy,
            draining: h.draining,
            maxLeases: h.maxLeases,
            active: routes.activeOn(h.host),
            load: loads.loadOf(h.host),
          })),
      }),
    ),
  ];
}
