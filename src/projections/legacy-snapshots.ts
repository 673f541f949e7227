/**
 * The snapshots leasehold wrote before they became incremental (one whole
 * object per kind, format v2): still read at start when a kind has no newer
 * snapshot, so an upgrade does not fold the whole stream once more. A
 * snapshot is a hint, never the truth: one that does not decode, was made by
 * another fold version, or lies beyond the stream is ignored (with a
 * warning) and the stream is folded from the start instead.
 */
import { deserialize, serialize } from "node:v8";
import type { ActorKind } from "../contract/subjects.ts";

/** One kind's projection as of stream sequence `seq`, in one object (format v2). */
export interface ProjectionSnapshot {
  readonly format: typeof SNAPSHOT_FORMAT;
  readonly kind: ActorKind;
  /** The fold version of the kind that produced the states; another version's snapshot is ignored. */
  readonly foldVersion: number;
  /** Every event of the kind with a stream sequence up to this one is folded in. */
  readonly seq: number;
  readonly takenAt: string;
  /** `[id, state, last subject sequence, last event instant]` per id. */
  readonly records: readonly (readonly [string, unknown, number, number])[];
  /** Remembered replies `[msgId, reply, atMs]`, oldest first. */
  readonly replies: readonly (readonly [string, unknown, number])[];
  /** What read models keep beside the states, by name. */
  readonly extras: Readonly<Record<string, unknown>>;
}

/** Marks a whole (v2) projection snapshot. */
export const SNAPSHOT_FORMAT = "leasehold.projection.v2";

/**
 * Serializes a snapshot with V8's structured serialization: it keeps the
 * Maps and Sets the states use, and encodes and decodes 100,000 records
 * several times faster than JSON with a reviver. A snapshot written by
 * another Node version that cannot be read is ignored like any other.
 */
export function encodeProjectionSnapshot(snapshot: ProjectionSnapshot): Uint8Array {
  return serialize(snapshot);
}

/** Why a snapshot cannot be used, or the snapshot. */
export type DecodedSnapshot =
  { readonly ok: true; readonly snapshot: ProjectionSnapshot } | { readonly ok: false; readonly reason: string };

/** Parses and checks a snapshot written by {@link encodeProjectionSnapshot} for `kind` at `foldVersion`. */
export function decodeProjectionSnapshot(bytes: Uint8Array, kind: ActorKind, foldVersion: number): DecodedSnapshot {
  let parsed: unknown;
  try {
    parsed = deserialize(bytes);
  } catch (e) {
    return { ok: false, reason: `does not decode: ${(e as Error).message}` };
  }
  const s = parsed as Partial<ProjectionSnapshot> | null;
  if (s === null || typeof s !== "object" || s.format !== SNAPSHOT_FORMAT) return { ok: false, reason: "not a projection snapshot" };
  if (s.kind !== kind) return { ok: false, reason: `made for kind ${String(s.kind)}` };
  if (s.foldVersion !== foldVersion) return { ok: false, reason: `made by fold version ${String(s.foldVersion)}, this is ${foldVersion}` };
  if (!Number.isSafeInteger(s.seq) || s.seq! < 0) return { ok: false, reason: "no valid sequence" };
  if (!Array.isArray(s.records) || !Array.isArray(s.replies)) return { ok: false, reason: "no records" };
  if (s.extras === null || typeof s.extras !== "object") return { ok: false, reason: "no extras" };
  return { ok: true, snapshot: s as ProjectionSnapshot };
}
