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
 * It never runs under load, light load included: "idle" is no command
 * handled and the event loop's utilisation under 5 % for the whole period,
 * sampled once a second (a service answering a few commands a second uses
 * far less than 5 % of its loop, and must not pause between them). Its
 * price is one pause when it runs (about 0.2 s at 100,000 held locks),
 * which a request arriving in that instant waits out; the next one waits
 * at least a hundred times that pause, so the pauses take at most 1 % of
 * the time, however the load comes and goes. 0 turns it off.
 */
import { performance, type EventLoopUtilization } from "node:perf_hooks";
import { getHeapStatistics } from "node:v8";
import type { Logger } from "pino";
import type { ServiceObserver } from "../service/start-service.ts";

/** How long the loop must stay idle before a collection (ms); 0: never. */
export const DEFAULT_IDLE_COLLECT_MS = 2000;

/** How much the heap (V8's and the buffers it owns) must have grown since the last collection to make another worth its pause. */
export const IDLE_COLLECT_MIN_GROWTH_BYTES = 32 * 1024 * 1024;

/** Utilisation of the event loop below which a sampling period counts as idle. */
export const IDLE_UTILISATION = 0.05;

/** The share of the time the collections' pauses may take: the next waits its last pause divided by this. */
export const IDLE_COLLECT_PAUSE_SHARE = 0.01;

/** One sample: the loop's utilisation over the last period, the commands handled so far, and the heap's size now. */
export interface LoadSample {
  readonly utilisation: number;
  /** Commands finished since the process started (a count that only grows). */
  readonly commands: number;
  readonly heapBytes: number;
}

/**
 * When to collect, from samples taken every `sampleMs` (its clock: time is
 * samples times `sampleMs`): after `idleMs` of idle samples in a row (no
 * command, the loop under 5 % busy), if the heap has grown by
 * `minGrowthBytes` past the lowest it was since the last collection, and
 * once the time since the last collection is its pause over `pauseShare`.
 */
export class IdleCollectPolicy {
  private idleForMs = 0;
  /** How long the last collection's pause still holds the next one back. */
  private waitLeftMs = 0;
  private baselineBytes: number | undefined;
  /** Commands finished as of the last sample (the count starts at 0 with the process). */
  private commands = 0;

  constructor(
    private readonly idleMs: number,
    private readonly sampleMs: number,
    private readonly minGrowthBytes = IDLE_COLLECT_MIN_GROWTH_BYTES,
    private readonly pauseShare = IDLE_COLLECT_PAUSE_SHARE,
  ) {}

  /** Whether to collect now. */
  observe(sample: LoadSample): boolean {
    this.baselineBytes = Math.min(this.baselineBytes ?? sample.heapBytes, sample.heapBytes);
    const quiet = sample.utilisation < IDLE_UTILISATION && sample.commands === this.commands;
    this.commands = sample.commands;
    this.idleForMs = quiet ? this.idleForMs + this.sampleMs : 0;
    this.waitLeftMs -= this.sampleMs;
    return this.idleForMs >= this.idleMs && this.waitLeftMs <= 0 && sample.heapBytes - this.baselineBytes >= this.minGrowthBytes;
  }

  /** What the collection left and how long it paused: the next one waits for growth past it, a new idle period, and its share of the time. */
  collected(heapBytesAfter: number, pauseMs: number): void {
    this.baselineBytes = heapBytesAfter;
    this.idleForMs = 0;
    this.waitLeftMs = pauseMs / this.pauseShare;
  }
}

/** Counts the commands the service finishes, passing every report on to `observer` (the metrics). */
export class CommandCount implements ServiceObserver {
  /** Commands finished so far. */
  count = 0;

  constructor(private readonly observer: ServiceObserver) {}

  commandFinished(kind: string, op: string, outcome: string, seconds: number): void {
    this.count++;
    this.observer.commandFinished(kind, op, outcome, seconds);
  }

  appendFinished(seconds: number): void {
    this.observer.appendFinished(seconds);
  }

  appendConflict(): void {
    this.observer.appendConflict();
  }

  replyRefused(path: "request" | "durable"): void {
    this.observer.replyRefused?.(path);
  }

  requestShed(reason: string): void {
    this.observer.requestShed?.(reason);
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
  /** Commands finished so far (a command in the period makes it busy). */
  readonly commands: () => number;
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
    if (running || !policy.observe({ utilisation, commands: options.commands(), heapBytes: before })) return;
    running = true;
    const started = performance.now();
    inspector
      .collect()
      .then(() => {
        const after = heapBytes();
        const pauseMs = performance.now() - started;
        policy.collected(after, pauseMs);
        // The collection's own time would read as load in the next sample.
        last = performance.eventLoopUtilization();
        options.logger.info(
          { heapMbBefore: mb(before), heapMbAfter: mb(after), pauseMs: Math.round(pauseMs) },
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
