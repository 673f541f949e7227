/**
 * Every endpoint of the contract, kind by kind, in one table: the op, its
 * request schema, and what a valid request becomes — a command for one
 * actor, an application command that spans actors, or a read of a
 * projection after catching up with the stream (so a read reflects every
 * write acknowledged before it).
 */
import type { ActorRuntime, Arrival } from "../actors/actor-runtime.ts";
import { badRequest } from "../contract/errors.ts";
import type { HostInfo } from "../contract/messages.ts";
import type { LockWaiters } from "../lock/waiters.ts";
import type { LockTurns } from "../lock/turns.ts";
import type { Clock } from "../actors/clock.ts";
import type { ProxyLeasing } from "../proxy/leasing.ts";
import type { RoutePlacement } from "../route/placement.ts";
import type { HostLoads } from "../host/loads.ts";
import type { HostTable } from "../host/table.ts";
import type { ProxyReadModel } from "../proxy/read-model.ts";
import { compareCodeUnits, routeLeaseView, sortedLeases } from "../route/state.ts";
import type { RouteTable } from "../route/table.ts";
import { answer, endpoint, refuse, type Endpoint } from "../transport/endpoint.ts";
import { hostRequests } from "../host/requests.ts";
import { lockRequests } from "../lock/requests.ts";
import { proxyRequests } from "../proxy/requests.ts";
import { routeRequests } from "../route/requests.ts";
import { sessionRequests } from "../session/requests.ts";
import { sessionIdFor } from "../session/ids.ts";

const reads = { reads: true };
/** The ops only `--operators` may call when it is set (docs/protocol.md, "Principals"). */
const operatorOp = { operatorOp: true };

/** What the lock endpoints need beyond the runtime: lock turns with sessions, the wait queue's runtime side and its ceiling. */
export interface LockAcquireOptions {
  readonly turns: LockTurns;
  readonly waiters: LockWaiters;
  /** The server's `--max-wait-ms`: a larger `waitMs` is BAD_REQUEST. */
  readonly maxWaitMs: number;
}

/**
 * `lock.acquire|renew|release|get|reset`, each for the lock actor named in
 * the request; an acquire with a `waitMs` goes through the lock waiters,
 * which park it when it joins the lock's wait queue, and one without is a
 * single turn of the lock's actor.
 */
export function lockEndpoints({ turns, waiters, maxWaitMs }: LockAcquireOptions): Endpoint[] {
  return [
    endpoint("lock", "acquire", lockRequests.acquire, async (r, a) => {
      const waitMs = r.waitMs ?? 0;
      if (waitMs > maxWaitMs) return refuse(badRequest(`waitMs: ${waitMs} exceeds the server's --max-wait-ms (${maxWaitMs})`));
      // A durable command has nobody waiting for its answer, so it may not wait.
      if (waitMs > 0 && a.requestedAt !== undefined) {
        return refuse(badRequest("waitMs: a durable command cannot wait (send waitMs 0 or none)"));
      }
      const acquire = { owner: r.owner, ttlMs: r.ttlMs, waitMs, requestId: r.requestId, session: r.session };
      // Without a wait nothing spans turns: one turn of the lock's actor, a repeat of an acquire that joined the queue included.
      return waitMs > 0 ? waiters.acquire(r.name, acquire, a) : turns.execute(r.name, { op: "acquire", ...acquire }, a);
    }),
    endpoint("lock", "renew", lockRequests.renew, (r, a) =>
      turns.execute(r.name, { op: "renew", owner: r.owner, etag: r.etag, ttlMs: r.ttlMs }, a),
    ),
    endpoint("lock", "release", lockRequests.release, (r, a) => turns.execute(r.name, { op: "release", etag: r.etag }, a)),
    endpoint("lock", "get", lockRequests.get, (r, a) => turns.execute(r.name, { op: "get" }, a), reads),
    endpoint("lock", "reset", lockRequests.reset, (r, a) => turns.execute(r.name, { op: "reset" }, a), operatorOp),
  ];
}

/** What the proxy endpoints use. */
export interface ProxyEndpointDeps {
  readonly proxies: ProxyLeasing;
  readonly model: ProxyReadModel;
  readonly clock: Clock;
}

/** `proxy.register|remove|acquire|release|report|list|counts`. */
export function proxyEndpoints({ proxies, model, clock }: ProxyEndpointDeps): Endpoint[] {
  return [
    endpoint(
      "proxy",
      "register",
      proxyRequests.register,
      (r, a) =>
        proxies.command(
          r.proxy,
          { op: "register", maxLeases: r.maxLeases, latencyMs: r.latencyMs, labels: r.labels, healthy: r.healthy },
          a,
        ),
      operatorOp,
    ),
    endpoint("proxy", "remove", proxyRequests.remove, (r, a) => proxies.command(r.proxy, { op: "remove" }, a), operatorOp),
    endpoint("proxy", "acquire", proxyRequests.acquire, (r, a) =>
      proxies.acquire({ ttlMs: r.ttlMs, target: r.target, candidates: r.candidates, labels: r.labels }, a),
    ),
    endpoint("proxy", "release", proxyRequests.release, (r, a) => proxies.release(r.leaseId, a)),
    endpoint("proxy", "report", proxyRequests.report, (r, a) =>
      proxies.report({ leaseId: r.leaseId, result: r.result, target: r.target }, a),
    ),
    endpoint(
      "proxy",
      "list",
      proxyRequests.list,
      async () => {
        await model.fresh();
        return answer({ proxies: model.list(clock.now()) });
      },
      reads,
    ),
    endpoint(
      "proxy",
      "counts",
      proxyRequests.counts,
      async () => {
        await model.fresh();
        return answer({ counts: model.counts(clock.now()) });
      },
      reads,
    ),
  ];
}

/** What the host and route endpoints use. */
export interface PlacementEndpointDeps {
  readonly runtime: ActorRuntime;
  readonly placement: RoutePlacement;
  readonly hosts: HostTable;
  readonly routes: RouteTable;
  /** The loads hosts publish (1.2 `host.list` shows them). */
  readonly loads: HostLoads;
}

/** `host.set|list`. */
export function hostEndpoints({ runtime, hosts, routes, loads }: PlacementEndpointDeps): Endpoint[] {
  return [
    endpoint(
      "host",
      "set",
      hostRequests.set,
      (r, a) => runtime.execute("host", r.host, { op: "set", healthy: r.healthy, draining: r.draining, maxLeases: r.maxLeases ?? null }, a),
      operatorOp,
    ),
    endpoint(
      "host",
      "list",
      hostRequests.list,
      async () => {
        await Promise.all([hosts.fresh(), routes.fresh()]);
        const list: HostInfo[] = [...hosts.snapshot().values()]
          .filter((h) => h.set)
          .sort((a, b) => compareCodeUnits(a.host, b.host))
          .map((h) => ({
            host: h.host,
            healthy: h.healthy,
            draining: h.draining,
            maxLeases: h.maxLeases,
            active: routes.activeOn(h.host),
            load: loads.loadOf(h.host),
          }));
        return answer({ hosts: list });
      },
      reads,
    ),
  ];
}

/** `route.acquire|move|candidates|pin|unpin|release|get|snapshot`. */
export function routeEndpoints({ placement, routes }: PlacementEndpointDeps): Endpoint[] {
  return [
    endpoint("route", "acquire", routeRequests.acquire, (r, a) =>
      placement.acquire({ route: r.route, fp: r.fp, model: r.model, candidates: r.candidates }, a),
    ),
    endpoint(
      "route",
      "move",
      routeRequests.move,
      (r, a) => placement.command(r.route, { op: "move", fp: r.fp, model: r.model, host: r.host }, a),
      operatorOp,
    ),
    endpoint("route", "candidates", routeRequests.candidates, (r, a) =>
      placement.command(r.route, { op: "candidates", hosts: r.hosts }, a),
    ),
    endpoint("route", "pin", routeRequests.pin, (r, a) => placement.command(r.route, { op: "pin", host: r.host }, a), operatorOp),
    endpoint("route", "unpin", routeRequests.unpin, (r, a) => placement.command(r.route, { op: "unpin" }, a), operatorOp),
    endpoint("route", "release", routeRequests.release, (r, a) => placement.command(r.route, { op: "release" }, a), operatorOp),
    endpoint(
      "route",
      "get",
      routeRequests.get,
      async (r) => {
        await routes.fresh();
        const state = routes.get(r.route);
        return answer({ pinned: state.pinned, leases: sortedLeases(state).map((l) => routeLeaseView(r.route, l)) });
      },
      reads,
    ),
    endpoint(
      "route",
      "snapshot",
      routeRequests.snapshot,
      async () => {
        await routes.fresh();
        const all = [...routes.routes()].sort(([a], [b]) => compareCodeUnits(a, b));
        return answer({ leases: all.flatMap(([route, state]) => sortedLeases(state).map((l) => routeLeaseView(route, l))) });
      },
      reads,
    ),
  ];
}

/**
 * `session.open|keepalive|close|get`, each for the session actor the request
 * names (`open`: the id the service chooses for it). `get` of a live session
 * adds the locks it holds, sorted (`locksOf`).
 */
export function sessionEndpoints(
  runtime: ActorRuntime,
  { newId, locksOf }: { readonly newId: () => string; readonly locksOf: (session: string, arrival: Arrival) => Promise<readonly string[]> },
): Endpoint[] {
  return [
    endpoint("session", "open", sessionRequests.open, (r, a) =>
      runtime.execute("session", sessionIdFor(r.owner, r.requestId, newId), { op: "open", owner: r.owner, ttlMs: r.ttlMs }, a),
    ),
    endpoint("session", "keepalive", sessionRequests.keepalive, (r, a) => runtime.execute("session", r.id, { op: "keepalive" }, a)),
    endpoint("session", "close", sessionRequests.close, (r, a) => runtime.execute("session", r.id, { op: "close" }, a)),
    endpoint(
      "session",
      "get",
      sessionRequests.get,
      async (r, a) => {
        const result = await runtime.execute("session", r.id, { op: "get" }, a);
        if (!result.ok || (result.reply as { session: unknown }).session === null) return result;
        return answer({ ...(result.reply as object), locks: await locksOf(r.id, a) });
      },
      // Not marked a read: the contract takes every session op as a durable command too.
    ),
  ];
}
