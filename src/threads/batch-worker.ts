/**
 * The worker's side of a two-thread read (worker-pipe.ts): unpacks each
 * batch, folds its messages with the job's `step`, sends what the job found
 * along the way, counts one more batch done in the shared counter (what the
 * main thread's backpressure waits on), and answers `finish()` at the end.
 */
import { parentPort, workerData } from "node:worker_threads";
import type { StoredMessage } from "../events/event-log.ts";
import { BatchUnpacker, type FoldBatch } from "./message-batches.ts";

/** Index in the shared counters: batches the worker has folded. */
export const DONE_BATCHES = 0;
/** Index in the shared counters: 1 once the worker failed (its error follows as a message). */
export const FAILED = 1;

/** What the worker sends back. */
export type FromWorker<Done, Event> =
  | { readonly type: "events"; readonly events: Event[] }
  | { readonly type: "done"; readonly answer: Done }
  | { readonly type: "error"; readonly message: string; readonly stack: string | undefined };

/** A job as the worker runs it. */
export interface BatchJob<Done, Event> {
  /**
   * Folds one message; `subject` is its subject's number, stable until
   * `resets` (of {@link serveBatches}' unpacker) moves.
   */
  readonly step: (message: StoredMessage, subject: number, resets: number) => void;
  /** The answer, once every message was folded (may take its time: the main thread's watchdog allows the stall timeout). */
  readonly finish: () => Done | Promise<Done>;
  /** Events found since the last call (sent with each batch's end), if any. */
  readonly drain?: () => Event[] | undefined;
}

/** The job the main thread asked for (`workerData.job`). */
export function jobOfWorker<Job>(): Job {
  return (workerData as { job: Job }).job;
}

/** Runs `job` on the batches the main thread sends, until its end. */
export function serveBatches<Done, Event>(job: BatchJob<Done, Event>): void {
  const port = parentPort;
  if (port === null) throw new Error("a batch worker runs as a worker thread only");
  const shared = new Int32Array((workerData as { shared: SharedArrayBuffer }).shared);
  const unpacker = new BatchUnpacker();
  const fail = (e: unknown) => {
    const error = e as Error;
    port.postMessage({ type: "error", message: error.message, stack: error.stack } satisfies FromWorker<Done, Event>);
    Atomics.store(shared, FAILED, 1);
    Atomics.notify(shared, DONE_BATCHES);
  };
  port.on("message", (message: FoldBatch | { type: "end" }) => {
    try {
      if (message.type === "end") {
        Promise.resolve(job.finish()).then((answer) => port.postMessage({ type: "done", answer } satisfies FromWorker<Done, Event>), fail);
        return;
      }
      unpacker.unpack(message, (m, subject) => job.step(m, subject, unpacker.resets));
      const events = job.drain?.();
      if (events !== undefined && events.length > 0) port.postMessage({ type: "events", events } satisfies FromWorker<Done, Event>);
      Atomics.add(shared, DONE_BATCHES, 1);
      Atomics.notify(shared, DONE_BATCHES);
    } catch (e) {
      fail(e);
    }
  });
}
