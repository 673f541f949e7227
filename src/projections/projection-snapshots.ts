/**
 * Incremental snapshots of a projection, as stored: per kind a manifest
 * naming a base (every record) and the deltas written after it (the records
 * that changed since the part before), each part checked by its SHA-256 and
 * length. A part is a run of frames (4-byte length, then V8's structured
 * serialization): a head with the part's sequence, remembered replies and
 * read models' extras, then the records in slices, so a large part is
 * encoded a slice at a time between other work.
 *
 * A snapshot is a hint, never the truth: a manifest or part that is missing,
 * does not decode, does not match its hash, was made by another fold
 * version, or lies beyond the stream makes the whole snapshot ignored (with
 * a warning), and the stream is folded from the start instead.
 */
import { createHash } from "node:crypto";
import { deserialize, serialize } from "node:v8";
import { setImmediate as yieldToOthers } from "node:timers/promises";
import type { ActorKind } from "../contract/subjects.ts";
import type { ProjectionSnapshotStore } from "./snapshot-stores.ts";

/** Marks an incremental snapshot's manifest (and its parts' encoding). */
export const MANIFEST_FORMAT = "leasehold.projection.v3";

/** `[id, state as the fold serialized it, last subject sequence, last event instant]`. */
export type SnapshotRecord = readonly [string, unknown, number, number];
/** `[msgId, reply, atMs]`. */
export type SnapshotReply = readonly [string, unknown, number];

/** One part as the manifest lists it. */
export interface ManifestPart {
  readonly name: string;
  /** The projection's sequence the part brings the records to. */
  readonly seq: number;
  readonly bytes: number;
  readonly sha256: string;
  readonly records: number;
}

/** The manifest of a kind's snapshot: its base first, then its deltas in order. */
export interface SnapshotManifest {
  readonly format: typeof MANIFEST_FORMAT;
  readonly kind: ActorKind;
  readonly foldVersion: number;
  /** Every event of the kind with a stream sequence up to this one is folded in (the last part's). */
  readonly seq: number;
  readonly takenAt: string;
  readonly parts: readonly ManifestPart[];
}

/** What one part carries. */
export interface SnapshotPart {
  readonly seq: number;
  readonly records: readonly SnapshotRecord[];
  /** Replies remembered since the part before (all the latest ones in a base), oldest first. */
  readonly replies: readonly SnapshotReply[];
  readonly extras: Readonly<Record<string, unknown>>;
}

/** A whole snapshot as read back: the base with every delta applied, in order. */
export interface RestoredSnapshot {
  readonly manifest: SnapshotManifest;
  /** Every part in order (applying them in turn gives the records, replies and extras). */
  readonly parts: readonly SnapshotPart[];
}

/** The blob name of a kind's manifest. */
export const manifestName = (kind: ActorKind): string => `${kind}.manifest`;
/** The blob name of one of a kind's parts. */
export const partName = (kind: ActorKind, part: string): string => `${kind}.${part}`;

/** Records per frame: small enough that encoding one holds other work for about a millisecond. */
const RECORDS_PER_FRAME = 2048;

/** Encodes a part a frame at a time, yielding to other work between frames; returns its bytes and digest. */
export async function encodePart(part: SnapshotPart): Promise<{ bytes: Uint8Array; sha256: string }> {
  return (await encodePartWithReplies(part, [part.replies]))[0]!;
}

/**
 * `part` encoded once for each set of `replies`, each what
 * {@link encodePart} gives for `part` with those replies; the records, which
 * are most of it, are serialized once for all (a start's backlog worker
 * answers every reply it kept, and hands over a base snapshot with the
 * latest few).
 */
export async function encodePartWithReplies(
  part: SnapshotPart,
  replies: readonly (readonly SnapshotReply[])[],
): Promise<{ bytes: Uint8Array; sha256: string }[]> {
  const frame = (value: unknown): Buffer[] => {
    const body = serialize(value);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(body.length);
    return [length, body];
  };
  const recordFrames: Buffer[] = [];
  for (let i = 0; i < part.records.length; i += RECORDS_PER_FRAME) {
    if (i > 0) await yieldToOthers();
    recordFrames.push(...frame(part.records.slice(i, i + RECORDS_PER_FRAME)));
  }
  return replies.map((r) => {
    const frames = [
      ...frame({ format: MANIFEST_FORMAT, seq: part.seq, replies: r, extras: part.extras, records: part.records.length }),
      ...recordFrames,
    ];
    const hash = createHash("sha256");
    for (const f of frames) hash.update(f);
    return { bytes: Buffer.concat(frames), sha256: hash.digest("hex") };
  });
}

/** Decodes a part checked against its manifest entry; a reason when it does not fit. */
export function decodePart(bytes: Uint8Array, expected: ManifestPart): SnapshotPart | string {
  if (bytes.length !== expected.bytes) return `part ${expected.name} has ${bytes.length} bytes, the manifest says ${expected.bytes}`;
  if (createHash("sha256").update(bytes).digest("hex") !== expected.sha256) return `part ${expected.name} does not match its SHA-256`;
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const frames: unknown[] = [];
  try {
    for (let at = 0; at < buffer.length;) {
      const length = buffer.readUInt32BE(at);
      frames.push(deserialize(buffer.subarray(at + 4, at + 4 + length)));
      at += 4 + length;
    }
  } catch (e) {
    return `part ${expected.name} does not decode: ${(e as Error).message}`;
  }
  const head = frames[0] as { format?: unknown; seq?: unknown; replies?: unknown; extras?: unknown; records?: unknown } | undefined;
  if (head?.format !== MANIFEST_FORMAT || head.seq !== expected.seq) return `part ${expected.name} is not the one the manifest names`;
  if (!Array.isArray(head.replies) || head.extras === null || typeof head.extras !== "object")
    return `part ${expected.name} has no replies`;
  const records = frames.slice(1).flat() as SnapshotRecord[];
  if (records.length !== head.records || records.length !== expected.records) return `part ${expected.name} lacks records`;
  return { seq: head.seq, records, replies: head.replies as SnapshotReply[], extras: head.extras as Record<string, unknown> };
}

/** Parses and checks a manifest for `kind` at `foldVersion`; a reason when it cannot be used. */
export function decodeManifest(bytes: Uint8Array, kind: ActorKind, foldVersion: number): SnapshotManifest | string {
  let m: Partial<SnapshotManifest> | null;
  try {
    m = JSON.parse(new TextDecoder().decode(bytes)) as Partial<SnapshotManifest> | null;
  } catch (e) {
    return `manifest does not decode: ${(e as Error).message}`;
  }
  if (m === null || typeof m !== "object" || m.format !== MANIFEST_FORMAT) return "not a projection snapshot manifest";
  if (m.kind !== kind) return `made for kind ${String(m.kind)}`;
  if (m.foldVersion !== foldVersion) return `made by fold version ${String(m.foldVersion)}, this is ${foldVersion}`;
  if (!Number.isSafeInteger(m.seq) || m.seq! < 0) return "no valid sequence";
  if (!Array.isArray(m.parts) || !m.parts.every(isManifestPart)) return "no valid list of parts";
  if (m.parts.at(-1)?.seq !== m.seq) return "no parts up to its sequence";
  return m as SnapshotManifest;
}

function isManifestPart(p: unknown): p is ManifestPart {
  const part = p as Partial<ManifestPart> | null;
  const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
  return (
    typeof part === "object" &&
    part !== null &&
    typeof part.name === "string" &&
    /^[A-Za-z0-9-]+$/.test(part.name) &&
    count(part.seq) &&
    count(part.bytes) &&
    count(part.records) &&
    typeof part.sha256 === "string"
  );
}

/** Encodes a manifest (JSON: small, and readable with `nats stream get`). */
export function encodeManifest(manifest: SnapshotManifest): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(manifest));
}

/**
 * Reads a kind's snapshot: the manifest and every part it names, all
 * checked. Undefined when there is none (a store of the older whole
 * snapshots has none: the stream is folded once); a reason when there is one that cannot be used.
 */
export async function readSnapshot(
  store: ProjectionSnapshotStore,
  kind: ActorKind,
  foldVersion: number,
): Promise<RestoredSnapshot | string | undefined> {
  const manifestBytes = await store.get(manifestName(kind));
  if (manifestBytes === undefined) return undefined;
  const manifest = decodeManifest(manifestBytes, kind, foldVersion);
  if (typeof manifest === "string") return manifest;
  // The parts are asked for together: a snapshot of many deltas waits about one round trip, not one per part.
  const parts = await Promise.all(
    manifest.parts.map(async (entry) => {
      const bytes = await store.get(partName(kind, entry.name));
      return bytes === undefined ? `part ${entry.name} is missing` : decodePart(bytes, entry);
    }),
  );
  const problem = parts.find((part) => typeof part === "string");
  if (problem !== undefined) return problem;
  return { manifest, parts: parts as SnapshotPart[] };
}

/**
 * Writes one part and then a manifest listing `before` and it: the manifest
 * goes last, so a save cut short leaves the previous snapshot whole.
 */
export async function writePart(
  store: ProjectionSnapshotStore,
  head: Pick<SnapshotManifest, "kind" | "foldVersion" | "takenAt">,
  before: readonly ManifestPart[],
  name: string,
  part: SnapshotPart,
): Promise<SnapshotManifest> {
  const { bytes, sha256 } = await encodePart(part);
  return writeEncodedPart(store, head, before, { name, seq: part.seq, bytes: bytes.length, sha256, records: part.records.length }, bytes);
}

/** Writes a part encoded already (`entry` names and describes `bytes`), then the manifest listing `before` and it. */
export async function writeEncodedPart(
  store: ProjectionSnapshotStore,
  head: Pick<SnapshotManifest, "kind" | "foldVersion" | "takenAt">,
  before: readonly ManifestPart[],
  entry: ManifestPart,
  bytes: Uint8Array,
): Promise<SnapshotManifest> {
  await store.put(partName(head.kind, entry.name), bytes);
  const manifest: SnapshotManifest = { format: MANIFEST_FORMAT, ...head, seq: entry.seq, parts: [...before, entry] };
  await store.put(manifestName(head.kind), encodeManifest(manifest));
  return manifest;
}
