/**
 * Replies remembered for `requestId`s, so that a repeated command is answered
 * without deciding again. Kept apart from the folded states and bounded by
 * count and by bytes, so neither memory nor a snapshot grows with traffic.
 */
import { requestOfMsgId } from "../events/event-log.ts";

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

/** A remembered reply, linked to its neighbours in the order it was remembered. */
interface Entry extends RememberedReply {
  readonly msgId: string;
  /** The request behind it, when its message id carries one (src/events/event-log.ts, requestMsgId). */
  readonly request: { readonly requestId: string; readonly fingerprint: string } | undefined;
  readonly bytes: number;
  older: Entry | undefined;
  newer: Entry | undefined;
}

/**
 * Remembered replies by message id, oldest first. The order is a list linked
 * through the entries, so dropping the oldest costs the same at the bound as
 * below it (walking a Map from its front crosses every slot deleted before,
 * 16-54 µs per eviction at 100,000 replies).
 */
export class ReplyMemory {
  private readonly entries = new Map<string, Entry>();
  /** The latest entry of each requestId, whatever entity or op it was for: what tells a reuse from a retry. */
  private readonly byRequest = new Map<string, Entry>();
  private oldest: Entry | undefined;
  private newest: Entry | undefined;
  private bytes = 0;
  private remembered = 0;
  private readonly maxEntries: number;
  private readonly maxBytes: number;

  constructor(private readonly limits: ReplyMemoryLimits = {}) {
    this.maxEntries = limits.maxEntries ?? 100_000;
    this.maxBytes = limits.maxBytes ?? 32 * 1024 * 1024;
  }

  /** Remembers `reply` for `msgId` as the newest (remembering an id again moves it to the end). */
  remember(msgId: string, reply: unknown, atMs: number): void {
    const bytes = msgId.length + approximateSize(reply) + 16;
    this.forget(msgId);
    const request = requestOfMsgId(msgId);
    const entry: Entry = { msgId, request, reply, atMs, bytes, older: this.newest, newer: undefined };
    if (this.newest === undefined) this.oldest = entry;
    else this.newest.newer = entry;
    this.newest = entry;
    this.entries.set(msgId, entry);
    if (request !== undefined) this.byRequest.set(request.requestId, entry);
    this.bytes += bytes;
    this.remembered++;
    while (this.oldest !== undefined && (this.entries.size > this.maxEntries || this.bytes > this.maxBytes)) this.forget(this.oldest.msgId);
  }

  /** The reply remembered for `msgId`, if any. */
  get(msgId: string): RememberedReply | undefined {
    return this.entries.get(msgId);
  }

  /** The fingerprint of the latest request remembered with `requestId`, and its event's instant. */
  requestOf(requestId: string): { readonly fingerprint: string; readonly atMs: number } | undefined {
    const entry = this.byRequest.get(requestId);
    return entry?.request && { fingerprint: entry.request.fingerprint, atMs: entry.atMs };
  }

  /** Drops replies older than the horizon at `now`, keeping the latest few regardless. */
  prune(now: number): void {
    const horizonMs = this.limits.horizonMs;
    if (horizonMs === undefined) return;
    const keep = this.limits.keepLatest ?? 256;
    while (this.oldest !== undefined && this.entries.size > keep && this.oldest.atMs < now - horizonMs) this.forget(this.oldest.msgId);
  }

  /**
   * Whether a reply of `atMs` would be pruned at `now` anyway, with `newer`
   * replies still to come after it: a start folding its backlog skips those
   * (and the work of making them), except the latest few.
   */
  outlived(atMs: number, now: number, newer: number): boolean {
    const horizonMs = this.limits.horizonMs;
    return horizonMs !== undefined && atMs < now - horizonMs && newer >= (this.limits.keepLatest ?? 256);
  }

  /** How many replies and about how many bytes are held. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  /** How many replies were ever remembered (the latest `n` of {@link latest} are those since the count was `rememberedCount - n`). */
  get rememberedCount(): number {
    return this.remembered;
  }

  /** The latest `max` replies as `[msgId, reply, atMs]`, oldest first (for snapshots). */
  latest(max: number): [string, unknown, number][] {
    const out: [string, unknown, number][] = [];
    for (let e = this.newest; e !== undefined && out.length < max; e = e.older) out.push([e.msgId, e.reply, e.atMs]);
    return out.reverse();
  }

  private forget(msgId: string): void {
    const entry = this.entries.get(msgId);
    if (entry === undefined) return;
    this.entries.delete(msgId);
    if (entry.request !== undefined && this.byRequest.get(entry.request.requestId) === entry)
      this.byRequest.delete(entry.request.requestId);
    this.bytes -= entry.bytes;
    if (entry.older === undefined) this.oldest = entry.newer;
    else entry.older.newer = entry.newer;
    if (entry.newer === undefined) this.newest = entry.older;
    else entry.newer.older = entry.older;
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
