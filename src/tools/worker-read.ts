/**
 * `replay` and `audit` on worker threads: the main thread only receives the
 * stream (the NATS client's work) and hands each batch of messages over to a
 * worker thread (fold-worker.ts, through src/threads/worker-pipe.ts), which
 * decodes, folds and checks them with the same code as the one-thread path
 * ({@link replaySource}, {@link auditSource}), so the answers are the same.
 * On three cores or more the audit's checks are split over two workers by
 * kind (split-audit.ts): one worker alone is the busiest thread of the read,
 * and a spare core can take half its work.
 */
import type { StoredMessage } from "../events/event-log.ts";
import type { Subjects } from "../contract/subjects.ts";
import type { AuditOptions, AuditSummary } from "./audit.ts";
import type { ReplayFilter, ReplayRange, ReplayView } from "./replay.ts";
import type { StreamSource } from "./stream-reader.ts";
import { pipeToWorkers } from "../threads/worker-pipe.ts";
import { availableParallelism } from "node:os";
import { AUDIT_LANES, SPLIT_FROM_CORES, SplitAuditMerge } from "./split-audit.ts";
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
  const [view] = await readInWorkers<ReplayView>(source, { toSeq: range.toSeq, toTime: range.toTime }, [job], onMessage, options);
  return view!;
}

/**
 * What {@link auditSource} answers, with the checks on worker threads: split
 * over two workers by kind (split-audit.ts) with `split`, on one without;
 * by default split on a machine of {@link SPLIT_FROM_CORES} cores or more.
 * `onViolation` and `onProgress` are called on this thread, in stream order,
 * a batch behind the read.
 */
export async function auditInWorker(
  source: StreamSource,
  subjects: Subjects,
  options: AuditOptions,
  onMessage?: (message: StoredMessage) => void,
  workerOptions: WorkerReadOptions & { readonly split?: boolean } = {},
): Promise<AuditSummary> {
  const { onViolation, onProgress, ...settings } = options;
  const bounds = { toSeq: options.toSeq, toTime: options.toTime };
  if (!(workerOptions.split ?? availableParallelism() >= SPLIT_FROM_CORES)) {
    const job: WorkerJob = { tool: "audit", prefix: subjects.prefix, options: settings, progress: onProgress !== undefined };
    const [summary] = await readInWorkers<AuditSummary>(source, bounds, [job], onMessage, workerOptions, (events) => {
      for (const e of events) {
        if ("violation" in e) onViolation?.(e.violation);
        else if ("progress" in e) onProgress?.(e.progress);
      }
    });
    return summary!;
  }
  // Each lane reports every finding; the merge decides what is in the range and tells it in stream order.
  const { fromSeq: _fromSeq, fromTime: _fromTime, ...laneSettings } = settings;
  const job: WorkerJob = { tool: "audit-lane", prefix: subjects.prefix, options: laneSettings };
  const merge = new SplitAuditMerge(subjects, options);
  const lanes = await readInWorkers<AuditSummary>(
    source,
    bounds,
    Array.from({ length: AUDIT_LANES }, () => job),
    onMessage,
    workerOptions,
    (events, lane) => {
      for (const e of events) if ("lane" in e) merge.laneFound(lane, e.lane);
    },
    (m) => merge.visit(m),
  );
  return merge.summary(lanes);
}

/** Reads `source` within `bounds` into a fold worker per job (by `laneOf`, with more than one). */
function readInWorkers<Done>(
  source: StreamSource,
  bounds: { toSeq?: number | undefined; toTime?: number | undefined },
  jobs: readonly WorkerJob[],
  onMessage: ((message: StoredMessage) => void) | undefined,
  options: WorkerReadOptions,
  onEvents?: (events: WorkerEvent[], lane: number) => void,
  laneOf: (message: StoredMessage) => number = () => 0,
): Promise<Done[]> {
  return pipeToWorkers<Done, WorkerEvent>({
    entry: FOLD_WORKER,
    jobs,
    laneOf,
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
