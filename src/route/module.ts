/**
 * Route placement in a service instance: the host and route actors, the host
 * and route tables their endpoints read, and the idle sweep.
 */
import { hostLogic } from "../host/index.ts";
import { routeLogic, routeSettingsOf } from "./logic.ts";
import { routeEndpoints } from "./endpoints.ts";
import { hostEndpoints } from "../host/index.ts";
import { expireIdleLeases } from "./idle-expiry.ts";
import { RoutePlacement } from "./placement.ts";
import { HostLoads } from "../host/index.ts";
import { HostTable } from "../host/index.ts";
import { RouteTable } from "./table.ts";
import type { KindContext, KindModule } from "../transport/kind-module.ts";

/** Registers the host and route actors with the runtime and returns their endpoints and sweep. */
/** Routes and the hosts they are placed on; `hostLoads` are the loads hosts publish (fed from NATS by the service; absent in simulations, where every load is unknown). */
export function routeModule(ctx: KindContext, hostLoads?: HostLoads): KindModule {
  const { runtime, config } = ctx;
  const settings = routeSettingsOf(config);
  const hosts = new HostTable(runtime.register(hostLogic()));
  const routes = new RouteTable(runtime.register(routeLogic(settings)));
  const loads = hostLoads ?? new HostLoads(config.loadStaleMs, ctx.clock, { maxUnknown: config.maxUnknownLoads });
  // Loads of hosts without a record are the ones bounded by --max-unknown-loads.
  loads.recogniseHosts((host) => hosts.snapshot().has(host));
  const deps = { runtime, placement: new RoutePlacement(runtime, hosts, routes, ctx.clock, loads), hosts, routes, loads };
  return {
    endpoints: [...hostEndpoints(deps), ...routeEndpoints(deps)],
    async start() {
      await Promise.all([hosts.start(), routes.start()]);
    },
    async sweep() {
      for (const projection of [runtime.projection("host"), runtime.projection("route")]) projection.pruneReplies(ctx.clock.now());
      const expired = await expireIdleLeases(runtime, routes, ctx.clock.now(), settings);
      if (expired > 0) ctx.logger.debug({ expired }, "expired idle route leases");
    },
    async stop() {
      await hosts.stop();
      await routes.stop();
    },
  };
}
