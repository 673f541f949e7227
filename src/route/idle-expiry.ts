/**
 * Idle expiry of route leases, the sweep's job: one `expire` turn, hence one
 * `RouteLeaseExpired`, per lease idle at `now`.
 */
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { ExpireLease, RouteSettings } from "./commands.ts";
import { isRouteLeaseIdle } from "./decide.ts";
import type { RouteTable } from "./table.ts";

/** How many expire turns the sweep runs at once. */
const SWEEP_CONCURRENCY = 16;

/**
 * Asks each route with a lease idle at `now` to expire it. The route actor
 * checks idleness again on its own current state, so a lease used meanwhile,
 * or expired by another instance, is left alone. Resolves with how many
 * leases it expired.
 */
export async function expireIdleLeases(
  runtime: ActorRuntime,
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
      const result = await runtime.execute("route", route, command);
      if (result.ok && (result.reply as { expired?: boolean }).expired === true) expired++;
    }
  };
  await Promise.all(Array.from({ length: Math.min(SWEEP_CONCURRENCY, due.length) }, worker));
  return expired;
}
