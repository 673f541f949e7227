/**
 * How long this process could not run a timer while a step ran: the
 * contract's 50 ms grant bounds are the service's own latency, which an
 * overloaded machine (other processes on two cores, a collection) adds to
 * without the service waiting on anything. A test of such a bound allows
 * the stall it saw, so it still fails when the service polls or sleeps and
 * no longer when the scheduler did.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";

/** Starts watching the event loop; `stop()` gives the longest delay seen past the histogram's resolution, in ms. */
export function watchLoopDelay(): { stop(): number } {
  const resolutionMs = 5;
  const histogram = monitorEventLoopDelay({ resolution: resolutionMs });
  histogram.enable();
  return {
    stop: () => {
      histogram.disable();
      return Math.max(0, histogram.max / 1e6 - resolutionMs);
    },
  };
}
