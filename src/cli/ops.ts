/** The commands a service answers, with the shape of their request bodies, for `leasehold call --help`. */

/** `kind.op` and its request body (`?` marks an optional field). */
export const OPS: readonly (readonly [string, string])[] = [
  ["lock.acquire", "{name, owner, ttlMs?, waitMs?}"],
  ["lock.renew", "{name, owner, etag, ttlMs?}"],
  ["lock.release", "{name, etag}"],
  ["lock.get", "{name}"],
  ["lock.reset", "{name}"],
  ["proxy.register", "{proxy, maxLeases, latencyMs?, labels?, healthy?}"],
  ["proxy.remove", "{proxy}"],
  ["proxy.acquire", "{ttlMs, target?, candidates?, labels?}"],
  ["proxy.release", "{leaseId}"],
  ["proxy.report", '{leaseId, result: "ok"|"rate_limited"|"banned", target?}'],
  ["proxy.list", "{}"],
  ["proxy.counts", "{}"],
  ["host.set", "{host, healthy, draining?, maxLeases?}"],
  ["host.list", "{}"],
  ["route.acquire", "{route, fp, model, candidates}"],
  ["route.move", "{route, fp, model, host}"],
  ["route.candidates", "{route, hosts}"],
  ["route.pin", "{route, host}"],
  ["route.unpin", "{route}"],
  ["route.release", "{route}"],
  ["route.get", "{route}"],
  ["route.snapshot", "{}"],
];

/** The ops as help text, one per line. */
export function opsHelp(): string {
  const width = Math.max(...OPS.map(([op]) => op.length));
  return OPS.map(([op, body]) => `  ${op.padEnd(width)}  ${body}`).join("\n");
}
