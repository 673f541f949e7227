/**
 * `replay` and `audit` on two threads: the main thread only receives the
 * stream (the NATS client's work) and copies each batch of messages into one
 * buffer that it transfers to a worker thread (fold-worker.ts), which
 * decodes, folds and checks them with the same code as the one-thread path
 * ({@link replaySource}, {@link auditSource}), so the answers are the same.
 *
 * Backpressure: at most {@link MAX_BYTES_IN_FLIGHT} of payloads wait for the
 * worker; beyond that the main thread blocks (`Atomics.wait`, bounded by the
 * stall timeout) inside the message callback, so the client reads no more of
 * the socket until the worker has caught up. The bound is generous so that
 * the read goes on while the worker starts (about 0.35 s: it loads the folds
 * afresh, from dist/ or from the bundle a checkout makes, worker-bundle.ts).
 */
import { Worker } from "node:worker_threads";
import type { StoredMessage } from "../events/index.ts";
import type { Subjects } from "../contract/subjects.ts";
import type { AuditOptions, AuditSummary } from "./audit.ts";
import type { ReplayFilter, ReplayRange, ReplayView } from "./replay.ts";
import type { StreamSource } from "./stream-reader.ts";
import { workerEntryFromSource } from "./worker-bundle.ts";
import { DONE_BATCHES, FAILED, type FoldBatch, type ToMain, type WorkerJob, type WorkerSetup } from "./worker-protocol.ts";

/** Messages per batch handed to the worker. */
const BATCH_MESSAGES = 4096;
/** Subjects numbered at most before the numbering starts again (see FoldBatch). */
const MAX_SUBJECTS = 100_000;
/** How many payload bytes may wait for the worker before the main thread stops reading (about a second of reading). */
const MAX_BYTES_IN_FLIGHT = 64 * 1024 * 1024;

/** Settings of the two-thread read. */
export interface WorkerReadOptions {
  /** The worker failing to finish a batch for this long fails the read (default 10 s, as the stream's own stall timeout). */
  readonly stallMs?: number;
  /** Subjects the main thread numbers before it starts again from 0 (default 100,000; the table's memory bound). */
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
  const answer = await readInWorker(source, { toSeq: range.toSeq, toTime: range.toTime }, job, onMessage, options, () => undefined);
  if (!("view" in answer)) throw new Error("the fold worker answered a replay without a view");
  return answer.view;
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
  const answer = await readInWorker(source, { toSeq: options.toSeq, toTime: options.toTime }, job, onMessage, workerOptions, (events) => {
    for (const e of events) {
      if ("violation" in e) onViolation?.(e.violation);
      else onProgress?.(e.progress);
    }
  });
  if (!("summary" in answer)) throw new Error("the fold worker answered an audit without a summary");
  return answer.summary;
}

/** Starts the fold worker: from dist/ as it is; from src/ (a checkout, run through tsx) bundled into one module (worker-bundle.ts). */
async function startWorker(setup: WorkerSetup): Promise<Worker> {
  const fromSource = import.meta.url.endsWith(".ts");
  const entry = fromSource ? await workerEntryFromSource() : new URL("./fold-worker.js", import.meta.url);
  return new Worker(entry, { workerData: setup });
}

/** Batches of messages, packed into fresh buffers (each is transferred away). */
class BatchPacker {
  count = 0;
  private seqs = new Float64Array(BATCH_MESSAGES);
  private times = new Float64Array(BATCH_MESSAGES);
  private ends = new Uint32Array(BATCH_MESSAGES);
  private subjectIds = new Int32Array(BATCH_MESSAGES);
  /** Every subject numbered so far (see FoldBatch), at most `maxSubjects` before the numbering starts again. */
  private readonly numbered = new Map<string, number>();
  private newSubjects: string[] = [];
  private resetSubjects = false;
  private bytes: Uint8Array<ArrayBuffer>;
  private used = 0;

  constructor(
    private readonly maxSubjects: number,
    private bytesHint = 256 * 1024,
  ) {
    this.bytes = new Uint8Array(bytesHint);
  }

  /** Adds one message; true when the batch is full. */
  add(m: StoredMessage): boolean {
    const size = m.payload.length;
    if (this.used + size > this.bytes.length) {
      const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.used + size));
      grown.set(this.bytes.subarray(0, this.used));
      this.bytes = grown;
    }
    this.bytes.set(m.payload, this.used);
    this.used += size;
    const i = this.count++;
    this.seqs[i] = m.seq;
    this.times[i] = m.time;
    this.ends[i] = this.used;
    let id = this.numbered.get(m.subject);
    if (id === undefined) {
      id = this.numbered.size;
      this.numbered.set(m.subject, id);
      this.newSubjects.push(m.subject);
    }
    this.subjectIds[i] = id;
    return this.count === BATCH_MESSAGES;
  }

  /** The batch so far and the buffers to transfer; starts a new one. */
  take(): { batch: FoldBatch; transfer: ArrayBuffer[] } {
    const batch: FoldBatch = {
      type: "batch",
      count: this.count,
      seqs: this.seqs.buffer,
      times: this.times.buffer,
      ends: this.ends.buffer,
      bytes: this.bytes.buffer,
      subjectIds: this.subjectIds.buffer,
      newSubjects: this.newSubjects,
      resetSubjects: this.resetSubjects,
    };
    // Bounded: past maxSubjects, the next batch numbers its subjects from 0 again (and says so).
    this.resetSubjects = this.numbered.size >= this.maxSubjects;
    if (this.resetSubjects) this.numbered.clear();
    // The next batch starts at the size this one needed: few regrowths, little slack.
    this.bytesHint = Math.max(this.bytesHint, this.used);
    this.seqs = new Float64Array(BATCH_MESSAGES);
    this.times = new Float64Array(BATCH_MESSAGES);
    this.ends = new Uint32Array(BATCH_MESSAGES);
    this.subjectIds = new Int32Array(BATCH_MESSAGES);
    this.newSubjects = [];
    this.bytes = new Uint8Array(this.bytesHint);
    this.used = 0;
    this.count = 0;
    return { batch, transfer: [batch.seqs, batch.times, batch.ends, batch.bytes, batch.subjectIds] };
  }
}

type Done = Extract<ToMain, { type: "done" }>;

async function readInWorker(
  source: StreamSource,
  bounds: { toSeq?: number | undefined; toTime?: number | undefined },
  job: WorkerJob,
  onMessage: ((message: StoredMessage) => void) | undefined,
  options: WorkerReadOptions,
  onEvents: (events: Extract<ToMain, { type: "events" }>["events"]) => void,
): Promise<Done> {
  const stallMs = options.stallMs ?? 10_000;
  const sharedBuffer = new SharedArrayBuffer(8);
  const shared = new Int32Array(sharedBuffer);
  const worker = await startWorker({ job, shared: sharedBuffer });
  let settle!: { resolve: (done: Done) => void; reject: (error: Error) => void };
  const answered = new Promise<Done>((resolve, reject) => (settle = { resolve, reject }));
  answered.catch(() => undefined); // awaited below; a failure during the read must not go unhandled meanwhile
  worker.on("message", (m: ToMain) => {
    if (m.type === "events") onEvents(m.events);
    else if (m.type === "done") settle.resolve(m);
    else settle.reject(Object.assign(new Error(m.message), { stack: m.stack }));
  });
  worker.on("error", (e) => settle.reject(e));
  worker.on("exit", (code) => settle.reject(new Error(`the fold worker exited (code ${code}) before it answered`)));

  const packer = new BatchPacker(options.maxSubjects ?? MAX_SUBJECTS);
  let sent = 0;
  /** Payload bytes of each batch sent; those from index `done` on still wait for the worker. */
  const sentBytes: number[] = [];
  let waiting = 0;
  let counted = 0;
  const send = () => {
    const { batch, transfer } = packer.take();
    const bytes = batch.bytes.byteLength; // read before the transfer detaches it
    worker.postMessage(batch, transfer);
    sent++;
    sentBytes.push(bytes);
    waiting += bytes;
    // Backpressure: wait (bounded) while the worker is too far behind; one batch may always wait.
    const deadline = performance.now() + stallMs;
    for (;;) {
      if (Atomics.load(shared, FAILED) !== 0) throw new Error("the fold worker failed");
      const done = Atomics.load(shared, DONE_BATCHES);
      for (; counted < done; counted++) waiting -= sentBytes[counted]!;
      if (waiting <= MAX_BYTES_IN_FLIGHT || sent - done <= 1) return;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`the fold worker folded nothing for ${stallMs} ms`);
      Atomics.wait(shared, DONE_BATCHES, done, left);
    }
  };
  try {
    try {
      await source.read({ toSeq: bounds.toSeq }, (m) => {
        if (bounds.toTime !== undefined && m.time > bounds.toTime) return false;
        if (packer.add(m)) send();
        onMessage?.(m);
        return true;
      });
      if (packer.count > 0) send();
    } catch (e) {
      // The worker's own error, when it is why the read stopped, says more than "the fold worker failed".
      if (Atomics.load(shared, FAILED) !== 0) await answered;
      throw e;
    }
    worker.postMessage({ type: "end" });
    // Bounded: the worker has at most a few batches left; it must keep folding them.
    let seen = -1;
    let watchdog: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => {
      watchdog = setInterval(() => {
        const done = Atomics.load(shared, DONE_BATCHES);
        if (done === seen) reject(new Error(`the fold worker folded nothing for ${stallMs} ms`));
        seen = done;
      }, stallMs);
    });
    stalled.catch(() => undefined);
    try {
      return await Promise.race([answered, stalled]);
    } finally {
      clearInterval(watchdog);
    }
  } finally {
    worker.removeAllListeners("exit");
    await worker.terminate();
  }
}
