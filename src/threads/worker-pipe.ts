/**
 * Reading on this thread, folding on a worker: the main thread only receives
 * messages (the NATS client's work) and copies each batch into buffers it
 * transfers to the worker (message-batches.ts), which decodes and folds them
 * (batch-worker.ts) and answers once at the end.
 *
 * Backpressure: at most {@link MAX_BYTES_IN_FLIGHT} of payloads wait for the
 * worker; beyond that the main thread blocks (`Atomics.wait`, bounded by the
 * stall timeout) inside the message callback, so the client reads no more of
 * the socket until the worker has caught up. The bound is generous so that
 * the read goes on while the worker starts (about 0.35 s: it loads its
 * modules afresh, from dist/ or from the bundle a checkout makes,
 * worker-bundle.ts). Every wait is bounded: a worker that folds nothing for
 * the stall timeout fails the pipe, and the worker is always terminated.
 */
import type { StoredMessage } from "../events/event-log.ts";
import { BatchPacker } from "./message-batches.ts";
import { DONE_BATCHES, FAILED, type FromWorker } from "./batch-worker.ts";
import { startWorker } from "./worker-bundle.ts";

/**
 * Subjects numbered at most before the numbering starts again (see
 * FoldBatch). A stream that cycles through more ids than this misses the
 * table on every message and sends every subject again: at 100,000, the
 * benches' stream of exactly 100,000 locks sent 978,400 subjects for
 * 1,000,000 messages, instead of 100,000. A million subjects of 30
 * characters hold about 90 MB here while the read lasts (the worker keeps
 * one id string per subject, which its records hold anyway); a stream with
 * that many ids holds several times that in its records.
 */
const MAX_SUBJECTS = 1_000_000;
/** How many payload bytes may wait for the worker before the main thread stops reading (about a second of reading). */
const MAX_BYTES_IN_FLIGHT = 64 * 1024 * 1024;

/** Hands each message to the pipe, with its message id when `withMsgId` (the worker needs it); false stops the read. */
export type PipeVisitor = (message: StoredMessage, withMsgId?: boolean) => boolean;

/** A two-thread read. */
export interface WorkerPipeOptions<Event> {
  /** The worker's module (a `.ts` of src/; dist/ runs its `.js`). */
  readonly entry: URL;
  /** What the worker is to do (its `workerData.job`). */
  readonly job: unknown;
  /** Reads the messages in stream order, handing each to `visit`. */
  readonly read: (visit: PipeVisitor) => Promise<void>;
  /** Events the worker sends along the way (violations, progress), in order. */
  readonly onEvents?: (events: Event[]) => void;
  /** The worker failing to finish a batch for this long fails the read (default 10 s). */
  readonly stallMs?: number | undefined;
  /** Subjects the main thread numbers before it starts again from 0 (default 1,000,000; the table's memory bound). */
  readonly maxSubjects?: number | undefined;
}

/** Reads with `options.read`, folds on the worker, and resolves with the worker's answer. */
export async function pipeToWorker<Done, Event = never>(options: WorkerPipeOptions<Event>): Promise<Done> {
  const stallMs = options.stallMs ?? 10_000;
  const sharedBuffer = new SharedArrayBuffer(8);
  const shared = new Int32Array(sharedBuffer);
  const worker = await startWorker(options.entry, { job: options.job, shared: sharedBuffer });
  let settle!: { resolve: (done: Done) => void; reject: (error: Error) => void };
  const answered = new Promise<Done>((resolve, reject) => (settle = { resolve, reject }));
  answered.catch(() => undefined); // awaited below; a failure during the read must not go unhandled meanwhile
  worker.on("message", (m: FromWorker<Done, Event>) => {
    if (m.type === "events") options.onEvents?.(m.events);
    else if (m.type === "done") settle.resolve(m.answer);
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
      await options.read((m, withMsgId) => {
        if (packer.add(m, withMsgId)) send();
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
