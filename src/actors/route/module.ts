/**
 * Route placement as a service module: the host and route actors, the host
 * and route tables their endpoints read, and the idle sweep.
 */
import type { KindContext, KindModule } from "../../kind-module.ts";
import type { ActorHost } from "../actor-host.ts";
import { hostEndpoints } from "../../api/host-endpoints.ts";
import { routeEndpoints } from "../../api/route-endpoints.ts";
import { HostTable } from "../../projections/host-table.ts";
import { RouteTable } from "../../projections/route-table.ts";
import { hostLogic } from "../host/logic.ts";
import { chooserNamed } from "./chooser.ts";
import type { ExpireLease, RouteSettings } from "./commands.ts";
import { isRouteLeaseIdle } from "./decide.ts";
import { routeLogic } from "./logic.ts";

/** How many expire turns the sweep runs at once. */
const SWEEP_CONCURRENCY = 16;

/** Registers the host and route actors with the host and returns their endpoints and sweep. */
export function routeModule(ctx: KindContext): KindModule {
  const settings: RouteSettings = { routeIdleMs: ctx.config.routeIdleMs, chooser: chooserNamed(ctx.config.routeChooser) };
  const hosts = new HostTable(ctx.host.register(hostLogic()));
  const routes = new RouteTable(ctx.host.register(routeLogic(settings)));
  return {
    endpoints: [...hostEndpoints(ctx.host, hosts, routes), ...routeEndpoints(ctx.host, hosts, routes, settings, ctx.clock)],
    async start() {
      await Promise.all([hosts.start(), routes.start()]);
    },
    async sweep() {
      for (const projection of [ctx.host.projection("host"), ctx.host.projection("route")]) projection.pruneReplies(ctx.clock.now());
      const expired = await expireIdleLeases(ctx.host, routes, ctx.clock.now(), settings);
      if (expired > 0) ctx.logger.debug({ expired }, "expired idle route leases");
    },
    async stop() {
      await hosts.stop();
      await routes.stop();
    },
  };
}

/**
 * Asks each route with a lease idle at `now` to expire it (one `expire` turn,
 * hence one `RouteLeaseExpired`, per lease). The route actor checks idleness
 * again on its own current state, so a lease used meanwhile, or expired by
 * another instance, is left alone. Resolves with how many leases it expired.
 */
export async function expireIdleLeases(
  host: ActorHost,
  routes: RouteTable,
  now: number,
  settings: Pick<RouteSettings, "routeIdleMs">,
): Promise<number> {
  await routes.fresh();
  const due: { route: string; fp: string; model: string }[] = [];
  for (const [route, state] of routes.routes()) {
    for (const lease of state.leases.values())
      if (isRouteLeaseIdle(lease, now, settings)) due.push({ route, fp: lease.fp, model: lease.model });
  }
  let expired = 0;
  let next = 0;
  const worker = async () => {
    while (next < due.length) {
      const { route, fp, model } = due[next++]!;
      const command: ExpireLease = { op: "expire", fp, model };
      const result = await host.execute("route", route, command);
      if (result.ok && (result.reply as { expired?: boolean }).expired === true) expired++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(SWEEP_CONCURRENCY, due.length) }, worker));
  return expired;
}
