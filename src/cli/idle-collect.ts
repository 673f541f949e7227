/**
 * `leasehold serve --idle-collect-ms`: once the service has been idle that
 * long after its heap grew, it asks V8 for the collection its memory reducer
 * would run a minute or more later, so the RSS goes back to what the live
 * state needs. The same idea as the JVM's periodic collection of an idle
 * program (JEP 346): give memory back when nobody is waiting for the CPU.
 *
 * Why: after a burst V8 keeps the old generation it grew to (up to 4× the
 * live heap), the garbage in it and the buffers that garbage holds mapped.
 * 100,000 held locks showed 275–291 MB of RSS ten seconds after the burst
 * that took them, about 50 MB of it live (bench/README.md, "Memory per held
 * lock"). A plain full collection frees the garbage but keeps the pages;
 * the inspector's `HeapProfiler.collectGarbage` runs V8's low-memory
 * collection, which also compacts, shrinks the young generation and unmaps
 * what is free.
 *
 * It never runs under load: "idle" is the event loop's utilisation under 5 %
 * for the whole period, sampled once a second. Its price is one pause when
 * it runs (about 0.2 s at 100,000 held locks), which a request arriving in
 * that instant waits out; 0 turns it off.
 */
import { performance, type EventLoopUtilization } from "node:perf_hooks";
import { getHeapStatistics } from "node:v8";
import type { Logger } from "pino";

/** How long the loop must stay idle before a collection (ms); 0: never. */
export const DEFAULT_IDLE_COLLECT_MS = 2000;

/** How much the heap (V8's and the buffers it owns) must have grown since the last collection to make another worth its pause. */
export const IDLE_COLLECT_MIN_GROWTH_BYTES = 32 * 1024 * 1024;

/** Utilisation of the event loop below which a sampling period counts as idle. */
export const IDLE_UTILISATION = 0.05;

/** One sample: the loop's utilisation over the last period, and the heap's size now. */
export interface LoadSample {
  readonly utilisation: number;
  readonly heapBytes: number;
}

/**
 * When to collect, from samples taken every `sampleMs`: after `idleMs` of
 * idle samples in a row, if the heap has grown by `minGrowthBytes` past what
 * the last collection left (or what it was at the first sample).
 */
export class IdleCollectPolicy {
  private idleForMs = 0;
  private baselineBytes: number | undefined;

  constructor(
    private readonly idleMs: number,
    private readonly sampleMs: number,
    private readonly minGrowthBytes = IDLE_COLLECT_MIN_GROWTH_BYTES,
  ) {}

  /** Whether to collect now. */
  observe(sample: LoadSample): boolean {
    this.baselineBytes ??= sample.heapBytes;
    // A collection may leave the heap larger than the first sample saw (the state grew): measure growth from the lower of the two.
    this.baselineBytes = Math.min(this.baselineBytes, sample.heapBytes);
    this.idleForMs = sample.utilisation < IDLE_UTILISATION ? this.idleForMs + this.sampleMs : 0;
    return this.idleForMs >= this.idleMs && sample.heapBytes - this.baselineBytes >= this.minGrowthBytes;
  }

  /** What the collection left: the next one waits for growth past it, and for a new idle period. */
  collected(heapBytesAfter: number): void {
    this.baselineBytes = heapBytesAfter;
    this.idleForMs = 0;
  }
}

/** The heap as the policy weighs it: V8's committed heap and the off-heap buffers its objects hold. */
export function heapBytes(): number {
  const s = getHeapStatistics();
  return s.total_heap_size + s.external_memory;
}

/** Runs V8's low-memory collection through an in-process inspector session (no flag needed). */
export type Collect = () => Promise<void>;

/** The inspector's collection; undefined where this node was built without the inspector. */
export async function inspectorCollect(): Promise<{ collect: Collect; close: () => void } | undefined> {
  let inspector: typeof import("node:inspector");
  try {
    inspector = await import("node:inspector");
  } catch {
    return undefined;
  }
  const session = new inspector.Session();
  session.connect();
  const collect = () =>
    new Promise<void>((resolve, reject) => session.post("HeapProfiler.collectGarbage", (err) => (err ? reject(err) : resolve())));
  return { collect, close: () => session.disconnect() };
}

/** Settings of {@link startIdleCollect}. */
export interface IdleCollectOptions {
  readonly idleMs: number;
  readonly logger: Logger;
  /** Sampling period (default 1000 ms). */
  readonly sampleMs?: number;
}

/** Samples the loop and collects when the policy says; returns the stop, or undefined when off or unavailable. */
export async function startIdleCollect(options: IdleCollectOptions): Promise<(() => void) | undefined> {
  if (options.idleMs === 0) {
    options.logger.debug("idle collection off");
    return undefined;
  }
  const inspector = await inspectorCollect();
  if (inspector === undefined) {
    options.logger.warn("idle collection unavailable: this node has no inspector; the heap is returned by V8's own policy");
    return undefined;
  }
  const sampleMs = options.sampleMs ?? 1000;
  const policy = new IdleCollectPolicy(options.idleMs, sampleMs);
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  let running = false;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const utilisation = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    const before = heapBytes();
    if (running || !policy.observe({ utilisation, heapBytes: before })) return;
    running = true;
    const started = performance.now();
    inspector
      .collect()
      .then(() => {
        const after = heapBytes();
        policy.collected(after);
        // The collection's own time would read as load in the next sample.
        last = performance.eventLoopUtilization();
        options.logger.info(
          { heapMbBefore: mb(before), heapMbAfter: mb(after), pauseMs: Math.round(performance.now() - started) },
          "idle: heap collected and its spare returned to the system",
        );
      })
      .catch((e: unknown) => options.logger.warn({ err: e }, "idle collection failed"))
      .finally(() => (running = false));
  }, sampleMs);
  timer.unref();
  options.logger.info({ idleMs: options.idleMs }, "idle collection on");
  return () => {
    clearInterval(timer);
    inspector.close();
  };
}

function mb(bytes: number): number {
  return Math.round(bytes / 1e5) / 10;
}
