/**
 * Saving and restoring one projection's snapshots incrementally: a save
 * writes the records that changed since the previous one (a delta), so its
 * cost follows the rate of change, not the number of records; a new base of
 * every record is written once the deltas hold about half as many records
 * as there are, or there are many of them, so a restore reads at most about
 * one and a half times the records (amortized, a base costs a few deltas).
 * The states are the fold's own data: it may give a `serialize`/`revive`
 * pair, so a record whose shape changes keeps being saved whole.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { ActorKind } from "../contract/subjects.ts";
import {
  readSnapshot,
  writePart,
  writeEncodedPart,
  partName,
  type ManifestPart,
  type SnapshotPart,
  type SnapshotRecord,
  type RestoredSnapshot,
} from "./projection-snapshots.ts";
import type { ChangeTrackedMap, ReplyMemory } from "./fold-store.ts";
import type { ProjectionRecord } from "./kind-fold.ts";
import type { EncodedPart } from "./backlog-job.ts";
import type { ProjectionSnapshotStore } from "./snapshot-stores.ts";

/** What the snapshots need of the kind's fold. */
export interface SnapshotFold<State> {
  readonly kind: ActorKind;
  /** Snapshots of another fold version are ignored. */
  readonly foldVersion: number;
  /** The state as saved (default: as it is; V8's serialization keeps plain data, Maps and Sets). */
  serializeState?(state: State): unknown;
  /** A saved state made whole again (default: as it was saved). */
  reviveState?(data: State): State;
}

/** When a save writes a new base instead of a delta. */
export interface SnapshotCompaction {
  /** At most this many parts (base and deltas) per snapshot (default 32). */
  readonly maxParts?: number;
  /** A new base once the deltas' records would pass half the records or this many, whichever is more (default 1,000). */
  readonly minBaseRecords?: number;
}

/** What the incremental snapshots of one projection read and restore. */
export interface IncrementalSnapshotsOptions<State> {
  readonly store: ProjectionSnapshotStore;
  readonly fold: SnapshotFold<State>;
  readonly records: ChangeTrackedMap<string, ProjectionRecord<State>>;
  readonly replies: ReplyMemory;
  readonly extras: ReadonlyMap<string, { save(): unknown; restore(data: unknown): void }>;
  readonly logger: Logger;
  readonly compaction?: SnapshotCompaction | undefined;
}

/** What a part is applied to: a projection's records, replies and extras. */
export interface PartTarget<State> {
  readonly fold: SnapshotFold<State>;
  readonly records: ChangeTrackedMap<string, ProjectionRecord<State>>;
  readonly replies: ReplyMemory;
  readonly extras: ReadonlyMap<string, { restore(data: unknown): void }>;
}

/** Applies `parts` in order to `target` (the records as saved: none of them is a change to save again). */
export function applyParts<State>(parts: readonly SnapshotPart[], target: PartTarget<State>): void {
  const { records, replies, extras, fold } = target;
  const revive = (data: State): State => fold.reviveState?.(data) ?? data;
  for (const part of parts) {
    for (const [id, data, seq, atMs] of part.records) records.setSaved(id, { state: revive(data as State), seq, atMs });
    for (const [msgId, reply, atMs] of part.replies) replies.remember(msgId, reply, atMs);
  }
  for (const [name, data] of Object.entries(parts.at(-1)?.extras ?? {})) extras.get(name)?.restore(data);
  records.changed.clear();
}

/** The records of `ids` as a part carries them. */
export function recordsOf<State>(
  records: ReadonlyMap<string, ProjectionRecord<State>>,
  ids: Iterable<string>,
  fold: SnapshotFold<State>,
): SnapshotRecord[] {
  const serialize = (state: State): unknown => (fold.serializeState === undefined ? state : fold.serializeState(state));
  const cut: SnapshotRecord[] = [];
  for (const id of ids) {
    const r = records.get(id);
    if (r !== undefined) cut.push([id, serialize(r.state), r.seq, r.atMs]);
  }
  return cut;
}

/** Replies at most kept in a part (bounded so a snapshot stays small whatever the traffic). */
export const SNAPSHOT_REPLIES = 10_000;

/** One kind's snapshots: what the stored manifest lists, and what changed since. */
export class IncrementalSnapshots<State> {
  /** The parts of the manifest last written or read (none: the next save writes a base). */
  private parts: readonly ManifestPart[] = [];
  private deltaRecords = 0;
  private repliesAtSave = 0;

  constructor(private readonly options: IncrementalSnapshotsOptions<State>) {}

  /**
   * Loads the latest usable snapshot into the records, replies and extras;
   * returns the stream sequence it covers, 0 (with a warning when there was
   * one) when the stream must be folded from the start.
   */
  async restore(streamLastSeq: () => Promise<number>): Promise<number> {
    const { store, logger } = this.options;
    const { kind, foldVersion } = this.options.fold;
    let read: RestoredSnapshot | string | undefined;
    try {
      read = await readSnapshot(store, kind, foldVersion);
    } catch (err) {
      logger.warn({ err, kind }, "projection snapshot not loaded; folding the stream from the start");
      return 0;
    }
    if (read === undefined) return 0;
    if (typeof read === "string") {
      logger.warn({ kind, reason: read }, "projection snapshot ignored; folding the stream from the start");
      return 0;
    }
    const last = await streamLastSeq();
    if (read.manifest.seq > last) {
      logger.warn(
        { kind, snapshotSeq: read.manifest.seq, streamSeq: last },
        "projection snapshot lies beyond the stream; folding the stream from the start",
      );
      return 0;
    }
    this.apply(read.parts);
    this.parts = read.manifest.parts;
    this.deltaRecords = this.parts.slice(1).reduce((n, p) => n + p.records, 0);
    logger.info(
      { kind, seq: read.manifest.seq, ids: this.options.records.size, parts: read.parts.length, takenAt: read.manifest.takenAt },
      "projection restored from a snapshot",
    );
    return read.manifest.seq;
  }

  /**
   * Takes in a base part made elsewhere (a start's backlog folded on a
   * worker thread) as if it had been restored: the next save writes a base.
   */
  adopt(part: SnapshotPart): void {
    this.apply([part]);
    this.parts = [];
    this.deltaRecords = 0;
  }

  /**
   * Saves as the new base a part encoded elsewhere (a start's backlog worker
   * encodes the part it {@link adopt}ed again, with the latest replies
   * only), so this thread writes it without encoding every record; resolves
   * with the bytes written. One save at a time (the projection sees to it).
   */
  saveEncoded(encoded: EncodedPart): Promise<number> {
    const { store, fold } = this.options;
    const entry = { ...encoded.part, name: `b${encoded.part.seq}-${randomUUID().slice(0, 8)}` };
    const head = { kind: fold.kind, foldVersion: fold.foldVersion, takenAt: new Date().toISOString() };
    return writeEncodedPart(store, head, [], entry, encoded.bytes).then((manifest) => {
      const replaced = this.parts;
      this.parts = manifest.parts;
      this.deltaRecords = 0;
      void this.forget(replaced);
      return entry.bytes;
    });
  }

  private apply(parts: readonly SnapshotPart[]): void {
    applyParts(parts, this.options);
    this.repliesAtSave = this.options.replies.rememberedCount;
  }

  /**
   * Saves the projection as of `seq`: the cut is taken synchronously (the
   * states are immutable values, so encoding them later sees the same), the
   * encoding and writing happen in slices after. Resolves with the bytes
   * written; one save at a time (the projection sees to it).
   */
  save(seq: number): Promise<number> {
    const { records, replies, fold } = this.options;
    const maxParts = this.options.compaction?.maxParts ?? 32;
    const minBase = this.options.compaction?.minBaseRecords ?? 1000;
    const changed = [...records.changed];
    records.changed.clear();
    const base =
      this.parts.length === 0 || this.parts.length >= maxParts || this.deltaRecords + changed.length > Math.max(minBase, records.size / 2);
    const cut = recordsOf(records, base ? records.keys() : changed, fold);
    const newReplies = replies.rememberedCount - this.repliesAtSave;
    const repliesAt = replies.rememberedCount;
    const part: SnapshotPart = {
      seq,
      records: cut,
      replies: replies.latest(base ? SNAPSHOT_REPLIES : Math.min(SNAPSHOT_REPLIES, newReplies)),
      extras: Object.fromEntries([...this.options.extras].map(([name, extra]) => [name, extra.save()])),
    };
    const name = `${base ? "b" : "d"}${seq}-${randomUUID().slice(0, 8)}`;
    const head = { kind: fold.kind, foldVersion: fold.foldVersion, takenAt: new Date().toISOString() };
    return writePart(this.options.store, head, base ? [] : this.parts, name, part).then(
      (manifest) => {
        const replaced = base ? this.parts : [];
        this.parts = manifest.parts;
        this.deltaRecords = base ? 0 : this.deltaRecords + cut.length;
        this.repliesAtSave = repliesAt;
        void this.forget(replaced);
        return manifest.parts.at(-1)!.bytes;
      },
      (err: unknown) => {
        // Not saved: the next save carries these records too.
        for (const id of changed) records.changed.add(id);
        throw err;
      },
    );
  }

  /** Drops the parts a new base replaced; what fails to go is only space. */
  private async forget(replaced: readonly ManifestPart[]): Promise<void> {
    const { store, logger } = this.options;
    const { kind } = this.options.fold;
    try {
      if (replaced.length > 0) await store.drop(replaced.map((p) => partName(kind, p.name)));
    } catch (err) {
      logger.debug({ err, kind }, "old snapshot parts not dropped");
    }
  }
}
