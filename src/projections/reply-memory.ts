/**
 * Replies remembered for `requestId`s, so that a repeated command is answered
 * without deciding again. Kept apart from the folded states and bounded by
 * count and by bytes, so neither memory nor a snapshot grows with traffic.
 */

/** A reply remembered for one event's message id. */
export interface RememberedReply {
  readonly reply: unknown;
  /** The instant of the event that produced it (epoch ms). */
  readonly atMs: number;
}

/** Bounds of a {@link ReplyMemory}. */
export interface ReplyMemoryLimits {
  /** At most this many replies (default 100,000). */
  readonly maxEntries?: number;
  /** At most about this many bytes of encoded replies (default 32 MiB). */
  readonly maxBytes?: number;
  /** Replies older than this are dropped by {@link ReplyMemory.prune}, except the latest `keepLatest`. */
  readonly horizonMs?: number;
  /** How many of the latest replies outlive the horizon (durable commands redelivered after a long outage; default 256). */
  readonly keepLatest?: number;
}

interface Entry extends RememberedReply {
  readonly bytes: number;
}

/** Remembered replies by message id, oldest first. */
export class ReplyMemory {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private readonly maxEntries: number;
  private readonly maxBytes: number;

  constructor(private readonly limits: ReplyMemoryLimits = {}) {
    this.maxEntries = limits.maxEntries ?? 100_000;
    this.maxBytes = limits.maxBytes ?? 32 * 1024 * 1024;
  }

  /** Remembers `reply` for `msgId` (re-inserting keeps the map in time order). */
  remember(msgId: string, reply: unknown, atMs: number): void {
    const bytes = msgId.length + approximateSize(reply) + 16;
    this.forget(msgId);
    this.entries.set(msgId, { reply, atMs, bytes });
    this.bytes += bytes;
    for (const [key] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.bytes <= this.maxBytes) break;
      this.forget(key);
    }
  }

  /** The reply remembered for `msgId`, if any. */
  get(msgId: string): RememberedReply | undefined {
    return this.entries.get(msgId);
  }

  /** Drops replies older than the horizon at `now`, keeping the latest few regardless. */
  prune(now: number): void {
    const horizonMs = this.limits.horizonMs;
    if (horizonMs === undefined) return;
    const keep = this.limits.keepLatest ?? 256;
    for (const [key, entry] of this.entries) {
      if (this.entries.size <= keep || entry.atMs >= now - horizonMs) break;
      this.forget(key);
    }
  }

  /** How many replies and about how many bytes are held. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  /** The latest `max` replies as `[msgId, reply, atMs]`, oldest first (for snapshots). */
  latest(max: number): [string, unknown, number][] {
    const all = [...this.entries];
    return all.slice(Math.max(0, all.length - max)).map(([key, e]) => [key, e.reply, e.atMs]);
  }

  private forget(msgId: string): void {
    const entry = this.entries.get(msgId);
    if (entry === undefined) return;
    this.entries.delete(msgId);
    this.bytes -= entry.bytes;
  }
}

/** About how many bytes `value` takes as JSON, without encoding it (replies are small plain objects). */
export function approximateSize(value: unknown, depth = 0): number {
  if (value === null || value === undefined) return 4;
  switch (typeof value) {
    case "string":
      return value.length + 2;
    case "number":
    case "boolean":
      return 8;
    case "object": {
      if (depth > 8) return 64;
      let n = 2;
      if (Array.isArray(value)) for (const v of value) n += approximateSize(v, depth + 1) + 1;
      else for (const [k, v] of Object.entries(value)) n += k.length + 4 + approximateSize(v, depth + 1);
      return n;
    }
    default:
      return 8;
  }
}
