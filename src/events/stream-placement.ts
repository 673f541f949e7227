/**
 * Creating a replicated stream while its cluster is still forming: JetStream
 * answers "no suitable peers for placement" until enough peers have joined
 * the meta group (and "temporarily unavailable" before it has a leader). A
 * service started with its cluster, as a deployment starts them, looks again
 * until its deadline instead of failing its start on the first answer.
 */
import { JetStreamApiError } from "@nats-io/jetstream";

/** JetStream's "no suitable peers for placement". */
export const NO_SUITABLE_PEERS = 10005;
/** JetStream's "JetStream system temporarily unavailable" (no meta leader yet). */
export const CLUSTER_NOT_AVAILABLE = 10008;

/** Whether `e` is an answer a forming cluster gives, which a later attempt may not. */
export function isClusterForming(e: unknown): boolean {
  return e instanceof JetStreamApiError && (e.code === NO_SUITABLE_PEERS || e.code === CLUSTER_NOT_AVAILABLE);
}

/** How long to keep trying, and the clock to judge it by. */
export interface PlacementPatience {
  /** Give up (with the last answer) once this long has passed since the first attempt. */
  readonly timeoutMs: number;
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
}

/**
 * Runs `attempt` until it succeeds, fails for a reason other than a forming
 * cluster, or `timeoutMs` has passed (then its last error); waits 100 ms
 * after the first refusal, doubling up to 1 s, and never past the deadline.
 */
export async function whileClusterForms<T>(attempt: () => Promise<T>, patience: PlacementPatience): Promise<T> {
  const deadline = patience.now() + patience.timeoutMs;
  for (let waitMs = 100; ; waitMs = Math.min(1000, waitMs * 2)) {
    try {
      return await attempt();
    } catch (e) {
      const left = deadline - patience.now();
      if (!isClusterForming(e) || left <= 0) throw e;
      await patience.sleep(Math.min(waitMs, left));
    }
  }
}
