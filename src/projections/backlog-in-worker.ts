/**
 * A start's backlog folded on a worker thread: this thread reads the kind's
 * messages (the NATS client's work, the larger part of a raw read) and
 * hands them over in batches; the worker (src/actors/backlog-worker.ts) decodes and
 * folds them with the projection's own fold store and answers one snapshot
 * part, which the projection loads as it loads a snapshot. The two threads
 * overlap, so a first start over a long stream takes about as long as the
 * slower of reading and folding rather than their sum.
 */
import type { EventLog, StoredMessage } from "../events/index.ts";
import { pipeToWorker } from "../threads/worker-pipe.ts";
import type { BacklogAnswer, BacklogJob } from "./backlog-job.ts";
import { decodePart, type SnapshotPart } from "./projection-snapshots.ts";

/** What {@link foldBacklogInWorker} reads and how. */
export interface BacklogRead {
  /** The worker's module (src/actors/backlog-worker.ts, which knows the kinds' logic). */
  readonly entry: URL;
  readonly log: EventLog;
  /** The kind's subject filter. */
  readonly filter: string;
  readonly job: BacklogJob;
  /** A read or a worker that moves nothing for this long fails the fold. */
  readonly stallMs: number;
  /** Whether the worker may need `message`'s id (a header parse: read only for replies it may keep). */
  readonly needsMsgId: (message: StoredMessage) => boolean;
}

/** Folds every message of the kind up to `job.toSeq` on a worker; the part that holds the result, and how many messages it folded. */
export async function foldBacklogInWorker(read: BacklogRead): Promise<{ part: SnapshotPart; messages: number }> {
  const { entry, log, filter, job, stallMs, needsMsgId } = read;
  const scan = log.scan?.bind(log);
  if (scan === undefined) throw new Error("this event log cannot be scanned");
  let messages = 0;
  const answer = await pipeToWorker<BacklogAnswer>({
    entry,
    job,
    stallMs,
    read: (visit) =>
      scan({ fromSeq: 1, toSeq: job.toSeq, filter }, (m) => (messages++, visit(m, needsMsgId(m) ? m.msgId : undefined)), stallMs),
  });
  const part = decodePart(answer.bytes, answer.part);
  if (typeof part === "string") throw new Error(`the backlog worker's answer: ${part}`);
  return { part, messages };
}
