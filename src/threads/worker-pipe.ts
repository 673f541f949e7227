/**
 * Reading on this thread, folding on a worker (or several): the main thread
 * only receives messages (the NATS client's work) and copies each batch into
 * buffers it transfers to the worker (message-batches.ts), which decodes and
 * folds them (batch-worker.ts) and answers once at the end. With several
 * workers, each message goes to the one its lane names, so that work which
 * falls apart by subject (the audit's kinds) runs on two cores at once.
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
import type { Worker } from "node:worker_threads";
import { BATCH_MESSAGES, BatchPacker } from "./message-batches.ts";
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
  const { job, onEvents, ...rest } = options;
  const [answer] = await pipeToWorkers<Done, Event>({
    ...rest,
    jobs: [job],
    laneOf: () => 0,
    onEvents: onEvents === undefined ? undefined : (events) => onEvents(events),
  });
  return answer!;
}

/** A read whose messages are shared out among several workers (one worker per lane). */
export interface WorkersPipeOptions<Event> extends Omit<WorkerPipeOptions<Event>, "job" | "onEvents"> {
  /** What each worker is to do (its `workerData.job`): one worker per job. */
  readonly jobs: readonly unknown[];
  /**
   * Which worker (an index into `jobs`) folds a message; asked once per
   * message, in stream order, with more than one worker. Each worker sees
   * its messages in stream order; the pipe keeps no order between workers.
   */
  readonly laneOf: (message: StoredMessage) => number;
  /** Events a worker sends along the way, in its order, with its index. */
  readonly onEvents?: ((events: Event[], lane: number) => void) | undefined;
}

/**
 * Reads with `options.read`, shares the messages out among the workers, and
 * resolves with every worker's answer, in the order of `jobs`. The batches go
 * out in step: batch n of every worker (empty or not) holds the messages of
 * the read's n-th stretch of {@link BATCH_MESSAGES} that are that worker's,
 * so that what the workers send back per batch can be put back in stream
 * order (src/tools/split-audit.ts does).
 */
export async function pipeToWorkers<Done, Event = never>(options: WorkersPipeOptions<Event>): Promise<Done[]> {
  const stallMs = options.stallMs ?? 10_000;
  const started = await Promise.allSettled(options.jobs.map((job, lane) => startLane<Done, Event>(options, job, lane)));
  const lanes = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const notStarted = started.find((s) => s.status === "rejected");
  if (notStarted !== undefined) {
    await Promise.all(lanes.map((l) => l.worker.terminate()));
    throw notStarted.reason;
  }
  try {
    const failed = () => lanes.some((l) => Atomics.load(l.shared, FAILED) !== 0);
    const answers = Promise.all(lanes.map((l) => l.answered));
    answers.catch(() => undefined);
    let sent = 0;
    let inBatch = 0;
    const send = () => {
      for (const lane of lanes) {
        const { batch, transfer } = lane.packer.take();
        const bytes = batch.bytes.byteLength; // read before the transfer detaches it
        lane.worker.postMessage(batch, transfer);
        lane.sentBytes.push(bytes);
        lane.waiting += bytes;
      }
      sent++;
      inBatch = 0;
      // Backpressure: wait (bounded) while a worker is too far behind; one batch may always wait.
      const deadline = performance.now() + stallMs;
      for (const lane of lanes) {
        for (;;) {
          if (failed()) throw new Error("the fold worker failed");
          const done = Atomics.load(lane.shared, DONE_BATCHES);
          for (; lane.counted < done; lane.counted++) lane.waiting -= lane.sentBytes[lane.counted]!;
          if (lane.waiting <= MAX_BYTES_IN_FLIGHT || sent - done <= 1) break;
          const left = deadline - performance.now();
          if (left <= 0) throw new Error(`the fold worker folded nothing for ${stallMs} ms`);
          Atomics.wait(lane.shared, DONE_BATCHES, done, left);
        }
      }
    };
    try {
      const single = lanes.length === 1 ? lanes[0]! : undefined;
      await options.read((m, withMsgId) => {
        // One worker: its packer says when the batch is full; several: every BATCH_MESSAGES messages, all in step.
        if (single !== undefined) {
          if (single.packer.add(m, withMsgId)) send();
        } else {
          lanes[options.laneOf(m)]!.packer.add(m, withMsgId);
          if (++inBatch === BATCH_MESSAGES) send();
        }
        return true;
      });
      if (lanes.some((l) => l.packer.count > 0)) send();
    } catch (e) {
      // The worker's own error, when it is why the read stopped, says more than "the fold worker failed".
      if (failed()) await answers;
      throw e;
    }
    for (const lane of lanes) lane.worker.postMessage({ type: "end" });
    // Bounded: each worker has at most a few batches left; they must keep folding them.
    let seen = -1;
    let watchdog: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => {
      watchdog = setInterval(() => {
        const done = lanes.reduce((sum, l) => sum + Atomics.load(l.shared, DONE_BATCHES), 0);
        if (done === seen) reject(new Error(`the fold worker folded nothing for ${stallMs} ms`));
        seen = done;
      }, stallMs);
    });
    stalled.catch(() => undefined);
    try {
      return await Promise.race([answers, stalled]);
    } finally {
      clearInterval(watchdog);
    }
  } finally {
    await Promise.all(
      lanes.map((l) => {
        l.worker.removeAllListeners("exit");
        return l.worker.terminate();
      }),
    );
  }
}

/** One worker of a pipe, with its batches in flight. */
interface Lane<Done> {
  readonly worker: Worker;
  readonly shared: Int32Array;
  readonly answered: Promise<Done>;
  readonly packer: BatchPacker;
  /** Payload bytes of each batch sent; those from index `counted` on may still wait for the worker. */
  readonly sentBytes: number[];
  waiting: number;
  counted: number;
}

async function startLane<Done, Event>(options: WorkersPipeOptions<Event>, job: unknown, lane: number): Promise<Lane<Done>> {
  const sharedBuffer = new SharedArrayBuffer(8);
  const worker = await startWorker(options.entry, { job, shared: sharedBuffer });
  let settle!: { resolve: (done: Done) => void; reject: (error: Error) => void };
  const answered = new Promise<Done>((resolve, reject) => (settle = { resolve, reject }));
  answered.catch(() => undefined); // awaited by the pipe; a failure during the read must not go unhandled meanwhile
  worker.on("message", (m: FromWorker<Done, Event>) => {
    if (m.type === "events") options.onEvents?.(m.events, lane);
    else if (m.type === "done") settle.resolve(m.answer);
    else settle.reject(Object.assign(new Error(m.message), { stack: m.stack }));
  });
  worker.on("error", (e) => settle.reject(e));
  worker.on("exit", (code) => settle.reject(new Error(`the fold worker exited (code ${code}) before it answered`)));
  return {
    worker,
    shared: new Int32Array(sharedBuffer),
    answered,
    packer: new BatchPacker(options.maxSubjects ?? MAX_SUBJECTS),
    sentBytes: [],
    waiting: 0,
    counted: 0,
  };
}
