/**
 * The worker thread of the tools' two-thread read (see worker-read.ts): the
 * main thread only receives from NATS and copies each batch of messages into
 * one transferred buffer; this thread decodes, folds and (for `audit`)
 * checks them, with the same {@link StreamFold} and {@link Auditor} as the
 * one-thread path, so the results cannot differ. After each batch it counts
 * one more batch done in the shared counter, which is what the main thread
 * waits on when it is too far ahead (the backpressure).
 */
import { parentPort, workerData } from "node:worker_threads";
import { type StoredMessage } from "../events/index.ts";
import { Subjects } from "../contract/subjects.ts";
import { Auditor, progressReporter, type AuditOptions, type Violation } from "./audit.ts";
import { replayStepper, replayViewOf } from "./replay.ts";
import {
  DONE_BATCHES,
  FAILED,
  type FoldBatch,
  type ToMain,
  type WorkerEvent,
  type WorkerJob,
  type WorkerSetup,
} from "./worker-protocol.ts";

const port = parentPort;
if (port === null) throw new Error("fold-worker.ts runs as a worker thread only");
const setup = workerData as WorkerSetup;
const shared = new Int32Array(setup.shared);

/** Folds (and, for `audit`, checks) one message. */
type Step = (message: StoredMessage) => void;

/** Events (violations, progress) waiting to go out with the next batch's answer. */
let outbox: WorkerEvent[] = [];
let step: Step;
let finish: () => ToMain;

function replayJob(job: Extract<WorkerJob, { tool: "replay" }>): void {
  const replay = replayStepper(new Subjects(job.prefix), job.range);
  step = replay.step;
  finish = () => ({ type: "done", view: replayViewOf(replay, job.range, job.filter, Date.now()) });
}

function auditJob(job: Extract<WorkerJob, { tool: "audit" }>): void {
  const options: AuditOptions = { ...job.options, onViolation: (violation: Violation) => outbox.push({ violation }) };
  const auditor = new Auditor(new Subjects(job.prefix), options);
  const reportProgress = progressReporter(
    auditor,
    job.options.progressEvery,
    job.progress ? (progress) => outbox.push({ progress }) : undefined,
  );
  step = (m) => {
    auditor.check(m);
    reportProgress(m);
  };
  finish = () => ({ type: "done", summary: auditor.summary() });
}

/** Subjects by number, as the main thread numbered them (see FoldBatch). */
const subjectTable: string[] = [];

function foldBatch(batch: FoldBatch): void {
  if (batch.resetSubjects) subjectTable.length = 0;
  for (const subject of batch.newSubjects) subjectTable.push(subject);
  const bytes = new Uint8Array(batch.bytes);
  const seqs = new Float64Array(batch.seqs);
  const times = new Float64Array(batch.times);
  const ends = new Uint32Array(batch.ends);
  const subjectIds = new Int32Array(batch.subjectIds);
  let start = 0;
  for (let i = 0; i < batch.count; i++) {
    const end = ends[i]!;
    step({ seq: seqs[i]!, subject: subjectTable[subjectIds[i]!]!, payload: bytes.subarray(start, end), time: times[i]! });
    start = end;
  }
}

const job = setup.job;
if (job.tool === "replay") replayJob(job);
else auditJob(job);

port.on("message", (message: FoldBatch | { type: "end" }) => {
  try {
    if (message.type === "end") {
      port.postMessage(finish());
      return;
    }
    foldBatch(message);
    if (outbox.length > 0) {
      port.postMessage({ type: "events", events: outbox } satisfies ToMain);
      outbox = [];
    }
    Atomics.add(shared, DONE_BATCHES, 1);
    Atomics.notify(shared, DONE_BATCHES);
  } catch (e) {
    const error = e as Error;
    port.postMessage({ type: "error", message: error.message, stack: error.stack } satisfies ToMain);
    Atomics.store(shared, FAILED, 1);
    Atomics.notify(shared, DONE_BATCHES);
  }
});
