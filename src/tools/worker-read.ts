/**
 * `replay` and `audit` on two threads: the main thread only receives the
 * stream (the NATS client's work) and hands each batch of messages over to a
 * worker thread (fold-worker.ts, through src/threads/worker-pipe.ts), which
 * decodes, folds and checks them with the same code as the one-thread path
 * ({@link replaySource}, {@link auditSource}), so the answers are the same.
 */
import type { StoredMessage } from "../events/event-log.ts";
import type { Subjects } from "../contract/subjects.ts";
import type { AuditOptions, AuditSummary } from "./audit.ts";
import type { ReplayFilter, ReplayRange, ReplayView } from "./replay.ts";
import type { StreamSource } from "./stream-reader.ts";
import { pipeToWorker } from "../threads/worker-pipe.ts";
import type { WorkerEvent, WorkerJob } from "./worker-protocol.ts";

/** The worker's module. */
const FOLD_WORKER = new URL("./fold-worker.ts", import.meta.url);

/** Settings of the two-thread read. */
export interface WorkerReadOptions {
  /** The worker failing to finish a batch for this long fails the read (default 10 s, as the stream's own stall timeout). */
  readonly stallMs?: number;
  /** Subjects the main thread numbers before it starts again from 0 (default 1,000,000; the table's memory bound). */
  readonly maxSubjects?: number;
}

/**
 * What {@link replaySource} answers, with the fold on a worker thread: the
 * state of every actor the filter keeps, as of the range's end (`--at`, else
 * the last folded message's time with `--seq`, else now). `onMessage` sees
 * each message as it is received (progress).
 */
export async function replayInWorker(
  source: StreamSource,
  subjects: Subjects,
  range: ReplayRange = {},
  filter: Omit<ReplayFilter, "changed"> = {},
  onMessage?: (message: StoredMessage) => void,
  options: WorkerReadOptions = {},
): Promise<ReplayView> {
  const job: WorkerJob = { tool: "replay", prefix: subjects.prefix, range, filter: { kind: filter.kind, id: filter.id } };
  return readInWorker<ReplayView>(source, { toSeq: range.toSeq, toTime: range.toTime }, job, onMessage, options);
}

/**
 * What {@link auditSource} answers, with the checks on a worker thread;
 * `onViolation` and `onProgress` are called on this thread, in the order the
 * worker found them, a batch behind the read.
 */
export async function auditInWorker(
  source: StreamSource,
  subjects: Subjects,
  options: AuditOptions,
  onMessage?: (message: StoredMessage) => void,
  workerOptions: WorkerReadOptions = {},
): Promise<AuditSummary> {
  const { onViolation, onProgress, ...settings } = options;
  const job: WorkerJob = { tool: "audit", prefix: subjects.prefix, options: settings, progress: onProgress !== undefined };
  return readInWorker<AuditSummary>(source, { toSeq: options.toSeq, toTime: options.toTime }, job, onMessage, workerOptions, (events) => {
    for (const e of events) {
      if ("violation" in e) onViolation?.(e.violation);
      else onProgress?.(e.progress);
    }
  });
}

/** Reads `source` within `bounds` into the fold worker running `job`. */
function readInWorker<Done>(
  source: StreamSource,
  bounds: { toSeq?: number | undefined; toTime?: number | undefined },
  job: WorkerJob,
  onMessage: ((message: StoredMessage) => void) | undefined,
  options: WorkerReadOptions,
  onEvents?: (events: WorkerEvent[]) => void,
): Promise<Done> {
  return pipeToWorker<Done, WorkerEvent>({
    entry: FOLD_WORKER,
    job,
    onEvents,
    stallMs: options.stallMs,
    maxSubjects: options.maxSubjects,
    read: (visit) =>
      source.read({ toSeq: bounds.toSeq }, (m) => {
        if (bounds.toTime !== undefined && m.time > bounds.toTime) return false;
        visit(m);
        onMessage?.(m);
        return true;
      }),
  });
}
