/**
 * What the main thread and the fold worker (fold-worker.ts) say to each
 * other in the tools' two-thread read; structured-clone shapes only.
 */
import type { ActorKind } from "../contract/subjects.ts";
import type { AuditOptions, AuditProgress, AuditSummary, Violation } from "./audit.ts";
import type { ReplayRange, ReplayView } from "./replay.ts";

/** Index in the shared counters: batches the worker has folded. */
export const DONE_BATCHES = 0;
/** Index in the shared counters: 1 once the worker failed (its error follows as a message). */
export const FAILED = 1;

/** What the worker does with the messages. */
export type WorkerJob =
  | {
      readonly tool: "replay";
      readonly prefix: string;
      readonly range: ReplayRange;
      readonly filter: { readonly kind?: ActorKind | undefined; readonly id?: string | undefined };
    }
  | {
      readonly tool: "audit";
      readonly prefix: string;
      readonly options: Omit<AuditOptions, "onViolation" | "onProgress">;
      /** Whether the main thread wants progress every `options.progressEvery` messages. */
      readonly progress: boolean;
    };

/** The worker's `workerData`. */
export interface WorkerSetup {
  readonly job: WorkerJob;
  /** Int32 counters shared with the main thread ({@link DONE_BATCHES}, {@link FAILED}). */
  readonly shared: SharedArrayBuffer;
}

/**
 * Messages in stream order, packed: message i has sequence `seqs[i]`, stored
 * time `times[i]` (epoch ms), subject number `subjectIds[i]`, and payload
 * `bytes[ends[i-1] ?? 0 .. ends[i]]`. The buffers are transferred, not copied.
 *
 * Subjects are numbered in the order they first appear, and each is sent
 * once: `newSubjects` are the subjects numbered from this batch on, in
 * order. A stream has far fewer subjects than messages, so this clones a
 * few strings per batch instead of one per message, and the worker's
 * lookups by subject meet the same string each time. With `resetSubjects`
 * the numbering starts again from 0 at this batch (the table is bounded).
 */
export interface FoldBatch {
  readonly type: "batch";
  readonly count: number;
  readonly seqs: ArrayBuffer;
  readonly times: ArrayBuffer;
  readonly ends: ArrayBuffer;
  readonly bytes: ArrayBuffer;
  readonly subjectIds: ArrayBuffer;
  readonly newSubjects: readonly string[];
  readonly resetSubjects: boolean;
}

/** Something the audit found or reached, in the order it happened. */
export type WorkerEvent = { readonly violation: Violation } | { readonly progress: AuditProgress };

/** What the worker sends back. */
export type ToMain =
  | { readonly type: "events"; readonly events: WorkerEvent[] }
  | { readonly type: "done"; readonly view: ReplayView }
  | { readonly type: "done"; readonly summary: AuditSummary }
  | { readonly type: "error"; readonly message: string; readonly stack: string | undefined };
