/**
 * Where projection snapshots are kept: named blobs (a manifest per kind and
 * the parts it lists), written and read whole. In production they are plain messages of the
 * `<P>_PROJECTIONS` object store's stream, beside the object store's own
 * chunks: the object store hashes every byte with a SHA-256 written in
 * JavaScript on each write and read, which made saving 110,000 lock records
 * take 44 % of the main thread; the parts carry their own SHA-256, computed
 * by `node:crypto`, in the manifest.
 *
 * A blob's pieces are read by direct get, all at once once the first has
 * said how many there are: the stream API's get answers JSON with the bytes
 * in base64, and one piece after another waits a round trip each: the 20 MB
 * snapshot of 100,000 locks is 77 pieces. A
 * direct get may be answered by a replica a moment behind its leader; a
 * piece it has not heard of yet fails the part's SHA-256, and the snapshot
 * is ignored with a warning, as any that does not match.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { headers as natsHeaders } from "@nats-io/nats-core";
import { Objm } from "@nats-io/obj";
import { jetstreamManager, StorageType, type JetStreamClient, type JetStreamManager, type StoredMsg } from "@nats-io/jetstream";
import { withDeadline } from "../events/deadline.ts";

/** Named blobs of projection snapshots (names are dot-separated subject tokens). */
export interface ProjectionSnapshotStore {
  /** The blob saved under `name`, undefined when there is none (or only part of it). */
  get(name: string): Promise<Uint8Array | undefined>;
  /** Saves `bytes` under `name`, replacing what was there. */
  put(name: string, bytes: Uint8Array): Promise<void>;
  /** Forgets the blobs of `names` (the parts a newer base made useless). */
  drop(names: readonly string[]): Promise<void>;
}

/** Keeps snapshots in memory (simulations and unit tests). */
export class MemoryProjectionSnapshotStore implements ProjectionSnapshotStore {
  readonly saved = new Map<string, Uint8Array>();
  /** How many manifest loads found one (tests prove a start used a snapshot). */
  loadsFound = 0;
  get(name: string): Promise<Uint8Array | undefined> {
    const bytes = this.saved.get(name);
    if (bytes !== undefined && name.endsWith(".manifest")) this.loadsFound++;
    return Promise.resolve(bytes);
  }
  put(name: string, bytes: Uint8Array): Promise<void> {
    this.saved.set(name, bytes);
    return Promise.resolve();
  }
  drop(names: readonly string[]): Promise<void> {
    for (const name of names) this.saved.delete(name);
    return Promise.resolve();
  }
}

/** Bytes per message of a blob: well under the server's default 1 MiB max_payload. */
const PIECE_BYTES = 256 * 1024;
/** Piece 0's header: how many pieces the blob has. */
const PIECES_HEADER = "Leasehold-Pieces";

/**
 * Keeps snapshots in the `<P>_PROJECTIONS` bucket's stream: a blob is one or
 * more messages on `$O.<bucket>.C.lh.<name>.<i>` (each rolls up its subject,
 * so a name saved again keeps only its latest bytes), which the service's
 * permissions already cover, and which the object store never reads (its
 * chunk subjects are named by a NUID). The object store makes the bucket.
 */
export class ObjectProjectionSnapshotStore implements ProjectionSnapshotStore {
  private readonly js: JetStreamClient;

  private constructor(
    private readonly jsm: JetStreamManager,
    private readonly bucket: string,
    private readonly timeoutMs: number,
    /** Whether the bucket's stream answers direct gets (a bucket made by the object store does). */
    private readonly direct: boolean,
  ) {
    this.js = jsm.jetstream();
  }

  /** Opens the bucket, creating it when missing. */
  static async open(nc: NatsConnection, bucket: string, replicas: number, timeoutMs = 10_000): Promise<ObjectProjectionSnapshotStore> {
    await withDeadline(
      new Objm(nc).create(bucket, { replicas, storage: StorageType.File, description: "leasehold projection snapshots" }),
      timeoutMs,
      `open object store ${bucket}`,
    );
    const jsm = await jetstreamManager(nc, { timeout: timeoutMs });
    const info = await withDeadline(jsm.streams.info(`OBJ_${bucket}`), timeoutMs, `read the ${bucket} stream's settings`);
    return new ObjectProjectionSnapshotStore(jsm, bucket, timeoutMs, info.config.allow_direct === true);
  }

  private get stream(): string {
    return `OBJ_${this.bucket}`;
  }

  private subject(name: string, piece: number): string {
    return `$O.${this.bucket}.C.lh.${name}.${piece}`;
  }

  private async piece(name: string, i: number): Promise<{ data: Uint8Array; pieces: number } | undefined> {
    const query = { last_by_subj: this.subject(name, i) };
    const m: StoredMsg | null = await withDeadline(
      this.direct ? this.jsm.direct.getMessage(this.stream, query) : this.jsm.streams.getMessage(this.stream, query),
      this.timeoutMs,
      `load snapshot part ${name}`,
    );
    if (m === null) return undefined;
    return { data: m.data, pieces: Number(m.header.get(PIECES_HEADER) || 1) };
  }

  async get(name: string): Promise<Uint8Array | undefined> {
    const first = await this.piece(name, 0);
    if (first === undefined) return undefined;
    if (first.pieces === 1) return first.data;
    const rest = await Promise.all(Array.from({ length: first.pieces - 1 }, (_, i) => this.piece(name, i + 1)));
    if (rest.some((piece) => piece === undefined)) return undefined;
    return Buffer.concat([first.data, ...rest.map((piece) => piece!.data)]);
  }

  async put(name: string, bytes: Uint8Array): Promise<void> {
    const count = Math.max(1, Math.ceil(bytes.length / PIECE_BYTES));
    // The pieces after the first go out together; the first (naming the count) last, so a reader never sees a count without its pieces.
    const publish = (i: number) => {
      const h = natsHeaders();
      h.set("Nats-Rollup", "sub");
      if (i === 0) h.set(PIECES_HEADER, String(count));
      return this.js.publish(this.subject(name, i), bytes.subarray(i * PIECE_BYTES, (i + 1) * PIECE_BYTES), {
        headers: h,
        timeout: this.timeoutMs,
      });
    };
    await Promise.all(Array.from({ length: count - 1 }, (_, i) => publish(i + 1)));
    await publish(0);
  }

  async drop(names: readonly string[]): Promise<void> {
    for (const name of names)
      await withDeadline(
        this.jsm.streams.purge(this.stream, { filter: `$O.${this.bucket}.C.lh.${name}.>` }),
        this.timeoutMs,
        `drop snapshot part ${name}`,
      );
  }
}
