/**
 * The worker thread of the tools' two-thread read (see worker-read.ts): the
 * main thread only receives from NATS and hands over each batch of messages
 * in transferred buffers; this thread decodes, folds and (for `audit`)
 * checks them, with the same {@link StreamFold} and {@link Auditor} as the
 * one-thread path, so the results cannot differ. A split audit runs one of
 * these per lane, each checking the kinds the main thread sends it.
 */
import { Subjects } from "../contract/subjects.ts";
import { jobOfWorker, serveBatches, type BatchJob } from "../threads/batch-worker.ts";
import { Auditor, progressReporter, type AuditOptions, type AuditSummary, type Violation } from "./audit.ts";
import { replayStepper, replayViewOf, type ReplayView } from "./replay.ts";
import type { LaneFindings, WorkerEvent, WorkerJob } from "./worker-protocol.ts";

type Job = BatchJob<ReplayView | AuditSummary, WorkerEvent>;

function replayJob(job: Extract<WorkerJob, { tool: "replay" }>): Job {
  const replay = replayStepper(new Subjects(job.prefix), job.range);
  return { step: replay.step, finish: () => replayViewOf(replay, job.range, job.filter, Date.now()) };
}

function auditJob(job: Extract<WorkerJob, { tool: "audit" }>): Job {
  /** Events (violations, progress) waiting to go out with the next batch's answer. */
  let outbox: WorkerEvent[] = [];
  const options: AuditOptions = { ...job.options, onViolation: (violation: Violation) => outbox.push({ violation }) };
  const auditor = new Auditor(new Subjects(job.prefix), options);
  const reportProgress = progressReporter(
    auditor,
    job.options.progressEvery,
    job.progress ? (progress) => outbox.push({ progress }) : undefined,
  );
  return {
    step: (m) => {
      auditor.check(m);
      reportProgress(m);
    },
    finish: () => auditor.summary(),
    drain: () => {
      const out = outbox;
      outbox = [];
      return out;
    },
  };
}

/** One worker of a split audit: every finding, placed by its message's index in the batch, and one answer per batch. */
function auditLaneJob(job: Extract<WorkerJob, { tool: "audit-lane" }>): Job {
  let found: [number, Violation][] = [];
  let index = 0;
  const auditor = new Auditor(new Subjects(job.prefix), {
    ...job.options,
    onViolation: (violation: Violation) => found.push([index, violation]),
  });
  return {
    step: (m) => {
      auditor.check(m);
      index++;
    },
    finish: () => auditor.summary(),
    drain: () => {
      const lane: LaneFindings = found;
      found = [];
      index = 0;
      return [{ lane }];
    },
  };
}

const job = jobOfWorker<WorkerJob>();
serveBatches(job.tool === "replay" ? replayJob(job) : job.tool === "audit" ? auditJob(job) : auditLaneJob(job));
