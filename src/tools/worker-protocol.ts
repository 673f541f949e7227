/**
 * What the tools' main thread asks of the fold worker (fold-worker.ts), and
 * the events it sends back along the way; structured-clone shapes only.
 */
import type { ActorKind } from "../contract/subjects.ts";
import type { AuditOptions, AuditProgress, Violation } from "./audit.ts";
import type { ReplayRange } from "./replay.ts";

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
    }
  | {
      /** The checks of the kinds one worker of a split audit is sent (src/tools/split-audit.ts): every message's findings, with no range. */
      readonly tool: "audit-lane";
      readonly prefix: string;
      readonly options: Omit<AuditOptions, "onViolation" | "onProgress" | "fromSeq" | "fromTime">;
    };

/** Something the audit found or reached, in the order it happened. */
export type WorkerEvent = { readonly violation: Violation } | { readonly progress: AuditProgress } | { readonly lane: LaneFindings };

/**
 * What one worker of a split audit found in one batch, sent at the batch's
 * end (also when empty): each finding with the index, within the batch, of
 * the message it was found on.
 */
export type LaneFindings = readonly (readonly [index: number, violation: Violation])[];
