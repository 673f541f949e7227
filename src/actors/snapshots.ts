/**
 * Snapshots make an actor's activation cost follow its live state, not its
 * history: the host stores an actor's folded state with the stream sequence
 * it covers, and on activation loads it and replays only the events after it.
 * A snapshot that fails to load, or no longer matches the stream, is ignored:
 * it is never trusted over the stream.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { ActorKind } from "../events/index.ts";

/** One actor's state as of stream sequence `seq`, with its remembered replies. */
export interface ActorSnapshot {
  readonly v: 1;
  readonly seq: number;
  readonly lastAtMs: number;
  readonly state: unknown;
  /** Remembered replies for recent `requestId`s: `[msgId, reply, atMs]`, oldest first. */
  readonly recent: readonly (readonly [string, unknown, number])[];
}

/** Where snapshots are kept. */
export interface SnapshotStore {
  load(kind: ActorKind, id: string): Promise<ActorSnapshot | undefined>;
  save(kind: ActorKind, id: string, snapshot: ActorSnapshot): Promise<void>;
}

/** Serializes a snapshot; Maps and Sets (actor states use them) are tagged so they come back as such. */
export function encodeSnapshot(snapshot: ActorSnapshot): string {
  return JSON.stringify(snapshot, (_key, value: unknown) => {
    if (value instanceof Map) return { $map: [...value.entries()] };
    if (value instanceof Set) return { $set: [...value.values()] };
    return value;
  });
}

/** Parses a snapshot written by {@link encodeSnapshot}; undefined when it is not one. */
export function decodeSnapshot(text: string): ActorSnapshot | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text, (_key, value: unknown) => {
      if (value !== null && typeof value === "object" && !Array.isArray(value)) {
        const keys = Object.keys(value);
        const tagged = (value as Record<string, unknown>)[keys[0] ?? ""];
        if (keys.length === 1 && keys[0] === "$map" && Array.isArray(tagged)) return new Map(tagged as [unknown, unknown][]);
        if (keys.length === 1 && keys[0] === "$set" && Array.isArray(tagged)) return new Set(tagged);
      }
      return value;
    });
  } catch {
    return undefined;
  }
  const s = parsed as Partial<ActorSnapshot> | null;
  const valid =
    s !== null &&
    typeof s === "object" &&
    s.v === 1 &&
    Number.isSafeInteger(s.seq) &&
    s.seq! > 0 &&
    typeof s.lastAtMs === "number" &&
    s.state !== undefined &&
    Array.isArray(s.recent);
  return valid ? (s as ActorSnapshot) : undefined;
}

/** Keeps snapshots in memory (simulations and unit tests). */
export class MemorySnapshotStore implements SnapshotStore {
  readonly saved = new Map<string, string>();
  load(kind: ActorKind, id: string): Promise<ActorSnapshot | undefined> {
    const text = this.saved.get(snapshotKey(kind, id));
    return Promise.resolve(text === undefined ? undefined : decodeSnapshot(text));
  }
  save(kind: ActorKind, id: string, snapshot: ActorSnapshot): Promise<void> {
    this.saved.set(snapshotKey(kind, id), encodeSnapshot(snapshot));
    return Promise.resolve();
  }
}

/** Keeps snapshots in a JetStream KV bucket (one key per actor, latest value only). */
export class KvSnapshotStore implements SnapshotStore {
  private constructor(private readonly kv: KV) {}

  /** Opens the bucket, creating it when missing. */
  static async open(nc: NatsConnection, bucket: string, replicas: number): Promise<KvSnapshotStore> {
    const kv = await new Kvm(jetstream(nc)).create(bucket, { history: 1, replicas });
    return new KvSnapshotStore(kv);
  }

  async load(kind: ActorKind, id: string): Promise<ActorSnapshot | undefined> {
    const entry = await this.kv.get(snapshotKey(kind, id));
    if (entry === null || entry.operation !== "PUT") return undefined;
    return decodeSnapshot(entry.string());
  }

  async save(kind: ActorKind, id: string, snapshot: ActorSnapshot): Promise<void> {
    await this.kv.put(snapshotKey(kind, id), encodeSnapshot(snapshot));
  }
}

/** KV keys allow `[-/_=.a-zA-Z0-9]`: the id goes in as base64url. */
export function snapshotKey(kind: ActorKind, id: string): string {
  return `${kind}.${Buffer.from(id, "utf8").toString("base64url") || "="}`;
}
