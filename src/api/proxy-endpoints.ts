/**
 * The proxy endpoints (`proxy.register|remove|acquire|release|report|list|counts`).
 * Register and remove go to the named proxy's actor; acquire spans proxies
 * (the selector); release and report find the lease's proxy through the
 * lease-id index; list and counts read the projection after catching up with
 * the stream, so they reflect every write acknowledged before them.
 */
import type { z } from "zod";
import type { ActorHost, Clock, TurnResult } from "../actors/index.ts";
import type { ProxySelector } from "../actors/proxy/selector.ts";
import type { ReleaseProxyLease, ReportProxyLease } from "../actors/proxy/commands.ts";
import type { ProxyReadModel } from "../projections/proxy-read-model.ts";
import { actorEndpoint, type CommandEndpoint, type RunOptions } from "./command-endpoint.ts";
import { proxyRequests } from "./proxy-requests.ts";
import { parseRequest } from "./validation.ts";

/** What the proxy endpoints need. */
export interface ProxyEndpointDeps {
  readonly host: ActorHost;
  readonly model: ProxyReadModel;
  readonly selector: ProxySelector;
  readonly clock: Clock;
}

const unavailable = (e: unknown): TurnResult => ({
  ok: false,
  rejection: { code: "UNAVAILABLE", message: `the event stream could not be read: ${(e as Error).message}` },
});

/** Every proxy endpoint. */
export function proxyEndpoints({ host, model, selector, clock }: ProxyEndpointDeps): CommandEndpoint[] {
  /**
   * Proxy commands this instance is carrying out. A durable command reaches
   * its actor through the read model (acquire, release, report), not straight
   * into a mailbox, so it first waits for the commands taken before it: the
   * command stream's order is then the order of their effects.
   */
  const inFlight = new Set<Promise<TurnResult>>();
  const track = (run: Promise<TurnResult>): Promise<TurnResult> => {
    inFlight.add(run);
    const done = () => void inFlight.delete(run);
    run.then(done, done);
    return run;
  };
  const earlier = (options: RunOptions | undefined): Promise<unknown> | undefined =>
    options?.requestedAt === undefined || inFlight.size === 0 ? undefined : Promise.allSettled([...inFlight]);

  /** An endpoint that validates its body against `schema` and runs `handle` (a throw is answered as UNAVAILABLE). */
  const endpoint = <Req>(
    op: string,
    schema: z.ZodType<Req>,
    handle: (request: Req, options: RunOptions | undefined) => Promise<TurnResult>,
  ): CommandEndpoint => ({
    kind: "proxy",
    op,
    run(data, options) {
      const before = earlier(options);
      return track(
        (async (): Promise<TurnResult> => {
          const request = parseRequest(schema, data);
          if (!request.ok) return { ok: false, rejection: request.rejection };
          try {
            if (before !== undefined) await before;
            return await handle(request.value, options);
          } catch (e) {
            return unavailable(e);
          }
        })(),
      );
    },
  });
  const tracked = (inner: CommandEndpoint): CommandEndpoint => ({ ...inner, run: (data, options) => track(inner.run(data, options)) });

  /** The proxy a lease was granted on; catches up with the stream before saying it knows none. */
  const proxyOfLease = async (leaseId: string): Promise<string | undefined> => {
    const known = model.proxyOfLease(leaseId);
    if (known !== undefined) return known;
    await model.fresh();
    return model.proxyOfLease(leaseId);
  };

  return [
    tracked(
      actorEndpoint(host, "proxy", "register", proxyRequests.register, (r) => ({
        kind: "proxy",
        id: r.proxy,
        command: { op: "register", maxLeases: r.maxLeases, latencyMs: r.latencyMs, labels: r.labels, healthy: r.healthy },
      })),
    ),
    tracked(
      actorEndpoint(host, "proxy", "remove", proxyRequests.remove, (r) => ({ kind: "proxy", id: r.proxy, command: { op: "remove" } })),
    ),
    endpoint("acquire", proxyRequests.acquire, (r, options) =>
      selector.acquire({ ttlMs: r.ttlMs, target: r.target, candidates: r.candidates, labels: r.labels }, r.requestId, options?.requestedAt),
    ),
    endpoint("release", proxyRequests.release, async (r, options) => {
      const proxy = await proxyOfLease(r.leaseId);
      // Idempotent: an id that never resolved is released already.
      if (proxy === undefined) return { ok: true, reply: {} };
      const command: ReleaseProxyLease = { op: "release", leaseId: r.leaseId };
      return host.execute("proxy", proxy, command, r.requestId, options?.requestedAt);
    }),
    endpoint("report", proxyRequests.report, async (r, options) => {
      const proxy = await proxyOfLease(r.leaseId);
      if (proxy === undefined) return { ok: false, rejection: { code: "UNKNOWN_LEASE", message: `lease ${r.leaseId} does not resolve` } };
      const command: ReportProxyLease = { op: "report", leaseId: r.leaseId, result: r.result, target: r.target };
      return host.execute("proxy", proxy, command, r.requestId, options?.requestedAt);
    }),
    endpoint("list", proxyRequests.list, async () => {
      await model.fresh();
      return { ok: true, reply: { proxies: model.list(clock.now()) } };
    }),
    endpoint("counts", proxyRequests.counts, async () => {
      await model.fresh();
      return { ok: true, reply: { counts: model.counts(clock.now()) } };
    }),
  ];
}
