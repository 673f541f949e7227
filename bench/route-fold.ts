/**
 * In-process micro-benchmark of the route fold's cost per event against the
 * number of live leases in one route: each `RouteLeasePlaced` or
 * `RouteLeaseTouched` copies the route's lease map (states are immutable, so
 * that the turn's base record and the indexes' "before" stay valid), so its
 * cost grows with the route's live conversations. A developer's tool for the
 * figures in docs/performance.md ("Routes with many live leases"); not part
 * of `npm run bench`.
 *
 *   npx tsx bench/route-fold.ts [--leases 10,1000,10000] [--events 2000]
 */
import { parseArgs } from "node:util";
import { evolveRoute, initialRouteState, type RouteState } from "../src/route/state.ts";
import type { HistoryEntry } from "../src/events/envelope.ts";

const { values } = parseArgs({
  options: { leases: { type: "string", default: "10,1000,10000" }, events: { type: "string", default: "2000" } },
});
const sizes = values.leases.split(",").map(Number);
const events = Number(values.events);
if (sizes.some((n) => !Number.isSafeInteger(n) || n < 0) || !Number.isSafeInteger(events) || events < 1) {
  console.error("usage: npx tsx bench/route-fold.ts [--leases 10,1000,10000] [--events 2000]");
  process.exit(2);
}

const at = "2026-12-02T00:00:00.000Z";
let seq = 0;
const placed = (fp: string): HistoryEntry =>
  ({
    seq: ++seq,
    event: { type: "RouteLeasePlaced", v: 1, at, data: { fp, model: "m", host: "h1", from: "", reason: "new", reused: false } },
  }) as HistoryEntry;
const touched = (fp: string, atMs: number): HistoryEntry =>
  ({ seq: ++seq, event: { type: "RouteLeaseTouched", v: 1, at: new Date(atMs).toISOString(), data: { fp, model: "m" } } }) as HistoryEntry;

/** Microseconds per event of `make(i)` folded `events` times into `state`. */
function perEvent(state: RouteState, make: (i: number) => HistoryEntry): number {
  const t0 = performance.now();
  for (let i = 0; i < events; i++) state = evolveRoute(state, make(i));
  return ((performance.now() - t0) * 1000) / events;
}

console.log("| live leases in the route | µs per placement | µs per touch |");
console.log("| ---: | ---: | ---: |");
for (const n of sizes) {
  let state = initialRouteState("r");
  for (let i = 0; i < n; i++) state = evolveRoute(state, placed(`f${i}`));
  perEvent(state, (i) => placed(`warm${i % 50}`)); // warm-up
  const place = perEvent(state, (i) => placed(`g${i % 50}`));
  const touch = perEvent(state, (i) => touched(`f${i % Math.max(1, n)}`, Date.parse(at) + 1000 + i));
  console.log(`| ${n.toLocaleString("en-US")} | ${place.toFixed(1)} | ${n === 0 ? "–" : touch.toFixed(1)} |`);
}
