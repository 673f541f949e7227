/**
 * What a start asks of the backlog worker (backlog-worker.ts) and what it
 * answers; structured-clone shapes only.
 */
import type { ActorKind } from "../contract/subjects.ts";
import type { ManifestPart } from "./projection-snapshots.ts";
import type { ReplyMemoryLimits } from "./fold-store.ts";
import type { ForeignEvent } from "./fold-store.ts";

/** Fold one kind's backlog, up to `toSeq`, as the projection would. */
export interface BacklogJob {
  readonly kind: ActorKind;
  /** What the worker builds the kind's logic from (the runtime's settings; opaque here). */
  readonly settings: unknown;
  /** The projection's fold version: a worker whose fold differs refuses the job. */
  readonly foldVersion: number;
  /** The last stream sequence to read (the kind's last event when the start began). */
  readonly toSeq: number;
  readonly replies: ReplyMemoryLimits;
  /** The projection's clock when the start began (replies past their horizon are not kept). */
  readonly nowMs: number;
}

/** A snapshot part encoded, with its manifest entry. */
export interface EncodedPart {
  readonly bytes: Uint8Array;
  readonly part: ManifestPart;
}

/** The folded backlog, as one snapshot part (encoded, with its manifest entry); its sequence is the last one folded. */
export interface BacklogAnswer {
  readonly bytes: Uint8Array;
  readonly part: ManifestPart;
  /**
   * The same records encoded as the projection saves a base snapshot (the
   * latest replies only), so the start writes that snapshot without encoding
   * every record again on its own thread.
   */
  readonly base: EncodedPart;
  /** Events skipped because their envelope names another entity than their subject. */
  readonly foreign: { readonly count: number; readonly first: ForeignEvent | undefined };
}
