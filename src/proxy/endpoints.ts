/** The proxy endpoints: `proxy.register|remove|acquire|release|report|list|counts`. */
import type { Clock } from "../actors/clock.ts";
import { OPERATOR_OP, SizedAnswer, endpoint, readEndpoint, type Endpoint } from "../transport/endpoint.ts";
import type { ProxyLeasing } from "./leasing.ts";
import type { ProxyReadModel } from "./read-model.ts";
import { proxyRequests } from "./requests.ts";

/**
 * The fewest bytes one proxy takes in `proxy.list`'s JSON: its keys, a
 * one-character name, no labels or cooldowns, and a comma
 * (test/transport/whole-table-bounds.unit.test.ts checks it against the real thing).
 */
export const MIN_PROXY_BYTES = 80;

/** What the proxy endpoints use. */
export interface ProxyEndpointDeps {
  readonly proxies: ProxyLeasing;
  readonly model: ProxyReadModel;
  readonly clock: Clock;
}

/** `proxy.register|remove|acquire|release|report|list|counts`. */
export function proxyEndpoints({ proxies, model, clock }: ProxyEndpointDeps): Endpoint[] {
  const fresh = () => model.fresh();
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
      OPERATOR_OP,
    ),
    endpoint("proxy", "remove", proxyRequests.remove, (r, a) => proxies.command(r.proxy, { op: "remove" }, a), OPERATOR_OP),
    endpoint("proxy", "acquire", proxyRequests.acquire, (r, a) =>
      proxies.acquire({ ttlMs: r.ttlMs, target: r.target, candidates: r.candidates, labels: r.labels }, a),
    ),
    endpoint("proxy", "release", proxyRequests.release, (r, a) => proxies.release(r.leaseId, a)),
    endpoint("proxy", "report", proxyRequests.report, (r, a) =>
      proxies.report({ leaseId: r.leaseId, result: r.result, target: r.target }, a),
    ),
    readEndpoint("proxy", "list", proxyRequests.list, fresh, () => {
      const now = clock.now();
      return new SizedAnswer(model.registered() * MIN_PROXY_BYTES, "proxy.counts (active leases only)", () => ({
        proxies: model.list(now),
      }));
    }),
    readEndpoint("proxy", "counts", proxyRequests.counts, fresh, () => ({ counts: model.counts(clock.now()) })),
  ];
}
