/**
 * A start's backlog folded on a worker thread: this thread reads the kind's
 * messages (the NATS client's work, the larger part of a raw read) and
 * hands them over in batches; the worker (src/service/backlog-worker.ts) decodes and
 * folds them with the projection's own fold store and answers one snapshot
 * part, which the projection loads as it loads a snapshot. The two threads
 * overlap, so a first start over a long stream takes about as long as the
 * slower of reading and folding rather than their sum.
 */
import type { Logger } from "pino";
import type { EventLog, StoredMessage } from "../events/event-log.ts";
import { pipeToWorker } from "../threads/worker-pipe.ts";
import type { BacklogAnswer, BacklogJob, EncodedPart } from "./backlog-job.ts";
import { FOREIGN_EVENT_WARNING } from "./fold-store.ts";
import { decodePart, type SnapshotPart } from "./projection-snapshots.ts";
import type { ReplyMemoryLimits } from "./fold-store.ts";

/** The backlog a start may fold on a worker, and what it needs to. */
export interface BacklogRead {
  /** The worker's module (src/service/backlog-worker.ts, which knows the kinds' logic). */
  readonly entry: URL;
  readonly log: EventLog;
  /** The kind's subject filter. */
  readonly filter: string;
  /** The job, but for the replies' clock and limits, which come from `replies`. */
  readonly job: Omit<BacklogJob, "nowMs" | "replies">;
  readonly replies: ReplyMemoryLimits;
  /** The projection's clock. */
  readonly now: () => number;
  /** A read or a worker that moves nothing for this long fails the fold. */
  readonly stallMs: number;
  readonly logger: Logger;
}

/** The folded backlog: the part that holds it (its sequence the last folded), how many messages it folded, and its base snapshot encoded. */
export interface FoldedBacklog {
  readonly part: SnapshotPart;
  readonly messages: number;
  readonly base: EncodedPart;
}

/**
 * Folds every message of the kind up to `job.toSeq` on a worker and logs how
 * it went; undefined when it read nothing, or (after a warning) when the
 * worker failed: then this thread's follower folds the backlog instead.
 */
export async function foldBacklogInWorker(read: BacklogRead): Promise<FoldedBacklog | undefined> {
  const { job, logger } = read;
  const startedAt = performance.now();
  try {
    const folded = await pipeBacklog(read);
    if (folded.part.seq === 0) return undefined; // nothing to read after all: the follower reads what comes
    logger.info(
      {
        kind: job.kind,
        seq: folded.part.seq,
        events: folded.messages,
        ids: folded.part.records.length,
        ms: Math.round(performance.now() - startedAt),
      },
      "projection backlog folded on a worker thread",
    );
    return folded;
  } catch (err) {
    logger.warn({ err, kind: job.kind }, "backlog not folded on a worker thread; folding it on this one");
    return undefined;
  }
}

async function pipeBacklog(read: BacklogRead): Promise<FoldedBacklog> {
  const { entry, log, filter, stallMs, replies } = read;
  const scan = log.scan?.bind(log);
  if (scan === undefined) throw new Error("this event log cannot be scanned");
  const nowMs = read.now();
  const job: BacklogJob = { ...read.job, replies, nowMs };
  const horizonMs = replies.horizonMs;
  const keepLatest = replies.keepLatest ?? 256;
  // Whether the worker may need a message's id (a header parse), for a reply it may keep. The reply horizon is
  // judged by the event's own instant, in the payload; the stored instant is the server's, later by the append's
  // time and any clock skew, hence twice the horizon here.
  const needsMsgId = (m: StoredMessage) => horizonMs === undefined || (m.pending ?? 0) < keepLatest || m.time >= nowMs - 2 * horizonMs;
  let messages = 0;
  const answer = await pipeToWorker<BacklogAnswer>({
    entry,
    job,
    stallMs,
    read: (visit) =>
      scan(
        { fromSeq: 1, toSeq: job.toSeq, filter },
        (m) => {
          messages++;
          return visit(m, needsMsgId(m));
        },
        stallMs,
      ),
  });
  const part = decodePart(answer.bytes, answer.part);
  if (typeof part === "string") throw new Error(`the backlog worker's answer: ${part}`);
  const { count, first } = answer.foreign;
  if (count > 0) read.logger.warn({ kind: job.kind, count, first }, FOREIGN_EVENT_WARNING);
  return { part, messages, base: answer.base };
}
