/** The commands a service answers, with the shape of their request bodies, for `leasehold call --help`. */

/** `kind.op` and its request body (`?` marks an optional field). */
export const OPS: readonly (readonly [string, string])[] = [
  ["lock.acquire", "{name, owner, ttlMs? | session?, waitMs?}"],
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
  ["session.open", "{owner, ttlMs?}"],
  ["session.keepalive", "{id}"],
  ["session.close", "{id}"],
  ["session.get", "{id}"],
];

/** The ops as help text, one per line. */
export function opsHelp(): string {
  const width = Math.max(...OPS.map(([op]) => op.length));
  return OPS.map(([op, body]) => `  ${op.padEnd(width)}  ${body}`).join("\n");
}

/** Whether `kindOp` is an op a service answers. */
export function isOp(kindOp: string): boolean {
  return OPS.some(([op]) => op === kindOp);
}

/** The (up to three) ops nearest to `kindOp` by edit distance, nearest first, for "did you mean". */
export function closestOps(kindOp: string): string[] {
  return OPS.map(([op]) => ({ op, distance: editDistance(kindOp, op) }))
    .sort((a, b) => a.distance - b.distance || a.op.localeCompare(b.op))
    .slice(0, 3)
    .map(({ op }) => op);
}

/** Levenshtein distance (insertions, deletions and substitutions each cost one). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}
