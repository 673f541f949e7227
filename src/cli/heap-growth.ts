/**
 * `leasehold serve --heap-growth-percent`: how far V8 may grow its old
 * generation past the live heap. After each full collection V8 sets the
 * next one's limit at the live size times a factor it picks from how fast
 * the program allocates, up to 4×, and after a burst of requests the spare
 * heap stays mapped until its memory reducer runs, a minute or more later:
 * 100,000 held locks (under 50 MB live) showed 240–320 MB of RSS ten seconds
 * after the burst that took them, and about 190 MB held to 50 %.
 *
 * Off by default: a fixed growth makes full collections more frequent where
 * the live heap is small, and a service holding few leases spent 15–25 %
 * more CPU per request under it (bench/README.md, "Memory per held lock").
 * Holding it only once the live heap is large was tried and left the
 * overshoot of the collection before (201–290 MB). Where memory is scarcer
 * than CPU, an operator turns it on (docs/operations.md, "Memory"). It is set
 * once the start has folded the stream, so a first start keeps V8's policy.
 */
import { setFlagsFromString } from "node:v8";

/** The V8 flag set; V8 reads it at every full collection, so it applies from the next one on. */
const V8_FLAG = "--heap-growing-percent";

/** V8's own policy unless told otherwise. */
export const DEFAULT_HEAP_GROWTH_PERCENT = 0;

/** What {@link heapGrowthFlag} decided, for the start log. */
export type HeapGrowth =
  { readonly applied: true; readonly flag: string } | { readonly applied: false; readonly why: "node's own flag" | "V8's own policy" };

/**
 * The V8 flag for `percent` (0: none, V8's own policy), unless node was
 * started with the flag already (`execArgv`): an operator's own setting wins.
 */
export function heapGrowthFlag(percent: number, execArgv: readonly string[]): HeapGrowth {
  if (execArgv.some((a) => /^--heap[-_]growing[-_]percent(=|$)/.test(a))) return { applied: false, why: "node's own flag" };
  if (percent === 0) return { applied: false, why: "V8's own policy" };
  return { applied: true, flag: `${V8_FLAG}=${percent}` };
}

/** Applies `percent` to this process (every thread: V8's flags are the process's). */
export function applyHeapGrowth(percent: number, execArgv: readonly string[] = process.execArgv): HeapGrowth {
  const growth = heapGrowthFlag(percent, execArgv);
  if (growth.applied) setFlagsFromString(growth.flag);
  return growth;
}
