/**
 * Replies remembered for `requestId`s, so that a repeated command is answered
 * without deciding again. Kept apart from the folded states and bounded by
 * count and by bytes, so neither memory nor a snapshot grows with traffic.
 *
 * A reply made as its command was answered is kept as made. One a fold owes
 * (an event it read from the stream) is kept as where it is: the event
 * itself, already decoded, with its id; the reply is rendered from it only
 * when a retry (or a snapshot) asks, so folding a stream written moments
 * ago, every reply still owed, costs an entry per event and not a reply.
 */
import type { RecordedEvent } from "../events/envelope.ts";
import { requestOfMsgId } from "../events/event-log.ts";

/** A reply remembered for one event's message id. */
export interface RememberedReply {
  readonly reply: unknown;
  /** The instant of the event that produced it (epoch ms). */
  readonly atMs: number;
}

/** How many replies a {@link ReplyMemory} holds unless told otherwise. */
export const DEFAULT_MAX_REPLIES = 100_000;

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

/** Renders the reply owed to `recorded`, an event of `id` (the kind's {@link import("./kind-fold.ts").LateReply}). */
export type RenderReply = (id: string, recorded: RecordedEvent) => unknown;

/**
 * A remembered reply, linked to its neighbours in the order it was
 * remembered: made (`reply`), or still to render from `event` of `id`.
 */
interface Entry {
  readonly msgId: string;
  readonly atMs: number;
  /** The request behind it, when its message id carries one (src/events/event-log.ts, requestMsgId). */
  request: { readonly requestId: string; readonly fingerprint: string } | undefined;
  readonly bytes: number;
  reply: unknown;
  /** The event the reply is rendered from; undefined once rendered (or when it was made). */
  event: RecordedEvent | undefined;
  readonly id: string;
  /** How many replies were remembered before this one. */
  n: number;
  older: Entry | undefined;
  newer: Entry | undefined;
}

/** How a {@link ReplyMemory} takes in what it is told. */
export interface ReplyMemoryOptions {
  /**
   * Hold at most this many of the latest replies aside, in the order they
   * came, without looking them up by id; they are taken in when the memory is
   * first read. For a fold read whole before anyone asks (a start's backlog on
   * a worker thread), where a lookup and an eviction in a map of 100,000 ids
   * per event cost more than the rest of the reply. Must exceed
   * `maxEntries`: the oldest held aside are let go once it is full, which is
   * exact as long as the replies held aside, taken in alone, pass a bound
   * (then whatever came before them was evicted too); a read throws where
   * they do not (the same `requestId` on over `tail - maxEntries` of them).
   */
  readonly tail?: number;
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
  /** Replies held aside (see {@link ReplyMemoryOptions.tail}), a ring from `aside[asideStart]`. */
  private readonly aside: Entry[] | undefined;
  private asideStart = 0;
  private asideCount = 0;
  /** Whether replies held aside were let go since the memory last took them in. */
  private asideLost = false;
  /** The ordinal of the newest reply evicted by a bound. */
  private lastEvicted = -1;

  /** `render` makes the replies of entries remembered by {@link rememberEvent} (none without it). */
  constructor(
    private readonly limits: ReplyMemoryLimits = {},
    private readonly render?: RenderReply,
    options: ReplyMemoryOptions = {},
  ) {
    this.maxEntries = limits.maxEntries ?? DEFAULT_MAX_REPLIES;
    this.maxBytes = limits.maxBytes ?? 32 * 1024 * 1024;
    if (options.tail !== undefined) {
      if (options.tail <= this.maxEntries) throw new Error(`a reply tail of ${options.tail} does not exceed ${this.maxEntries} replies`);
      this.aside = new Array<Entry>(options.tail);
    }
  }

  /** Remembers `reply` for `msgId` as the newest (remembering an id again moves it to the end). */
  remember(msgId: string, reply: unknown, atMs: number): void {
    this.take({
      msgId,
      atMs,
      bytes: msgId.length + approximateSize(reply) + 16,
      reply,
      event: undefined,
      id: "",
      n: 0,
      request: undefined,
      older: undefined,
      newer: undefined,
    });
  }

  /**
   * Remembers for `msgId` the reply owed to `event`, an event of `id`, as
   * the newest, without making it: it is rendered when first asked for.
   * `eventBytes` (the event's encoded size) stands for what it holds.
   */
  rememberEvent(msgId: string, id: string, event: RecordedEvent, atMs: number, eventBytes: number): void {
    if (this.render === undefined) throw new Error("this reply memory renders no replies");
    this.take({
      msgId,
      atMs,
      bytes: msgId.length + eventBytes + 16,
      reply: undefined,
      event,
      id,
      n: 0,
      request: undefined,
      older: undefined,
      newer: undefined,
    });
  }

  /** Adds `entry`, or holds it aside (letting the oldest held go when they are as many as the tail). */
  private take(entry: Entry): void {
    const aside = this.aside;
    if (aside === undefined) return this.add(entry);
    if (this.asideCount === aside.length) {
      this.asideStart = (this.asideStart + 1) % aside.length;
      this.asideCount--;
      this.asideLost = true;
      this.remembered++;
    }
    aside[(this.asideStart + this.asideCount++) % aside.length] = entry;
  }

  /**
   * Takes in the replies held aside, in order. When some were let go, the
   * result is exact only if one of those taken in was evicted by a bound:
   * each reply's fate depends only on the replies after it, so those taken
   * in alone passed the bound, and everything before them was evicted first.
   */
  private settle(): void {
    const aside = this.aside;
    if (aside === undefined || this.asideCount === 0) return;
    const first = this.remembered;
    for (let i = 0; i < this.asideCount; i++) {
      const at = (this.asideStart + i) % aside.length;
      this.add(aside[at]!);
      aside[at] = undefined as unknown as Entry;
    }
    const lost = this.asideLost;
    [this.asideStart, this.asideCount, this.asideLost] = [0, 0, false];
    if (lost && this.lastEvicted < first) throw new Error("replies held aside were let go before a bound evicted any of them");
  }

  private add(entry: Entry): void {
    const { msgId, bytes } = entry;
    this.forget(msgId);
    entry.n = this.remembered;
    entry.request = requestOfMsgId(msgId);
    entry.older = this.newest;
    if (this.newest === undefined) this.oldest = entry;
    else this.newest.newer = entry;
    this.newest = entry;
    this.entries.set(msgId, entry);
    if (entry.request !== undefined) this.byRequest.set(entry.request.requestId, entry);
    this.bytes += bytes;
    this.remembered++;
    while (this.oldest !== undefined && (this.entries.size > this.maxEntries || this.bytes > this.maxBytes)) {
      this.lastEvicted = this.oldest.n;
      this.unlink(this.oldest);
    }
  }

  /** The reply remembered for `msgId`, if any. */
  get(msgId: string): RememberedReply | undefined {
    this.settle();
    const entry = this.entries.get(msgId);
    return entry === undefined ? undefined : { reply: this.replyOf(entry), atMs: entry.atMs };
  }

  /** The entry's reply, rendered (once) when it was remembered by its event. */
  private replyOf(entry: Entry): unknown {
    if (entry.event !== undefined) {
      entry.reply = this.render!(entry.id, entry.event);
      entry.event = undefined;
    }
    return entry.reply;
  }

  /** The fingerprint of the latest request remembered with `requestId`, and its event's instant. */
  requestOf(requestId: string): { readonly fingerprint: string; readonly atMs: number } | undefined {
    this.settle();
    const entry = this.byRequest.get(requestId);
    return entry?.request && { fingerprint: entry.request.fingerprint, atMs: entry.atMs };
  }

  /** Drops replies older than the horizon at `now`, keeping the latest few regardless. */
  prune(now: number): void {
    const horizonMs = this.limits.horizonMs;
    if (horizonMs === undefined) return;
    const keep = this.limits.keepLatest ?? 256;
    this.settle();
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
    this.settle();
    return { entries: this.entries.size, bytes: this.bytes };
  }

  /** How many replies were ever remembered (the latest `n` of {@link latest} are those since the count was `rememberedCount - n`). */
  get rememberedCount(): number {
    this.settle();
    return this.remembered;
  }

  /** The latest `max` replies as `[msgId, reply, atMs]`, oldest first (for snapshots). */
  latest(max: number): [string, unknown, number][] {
    this.settle();
    const out: [string, unknown, number][] = [];
    for (let e = this.newest; e !== undefined && out.length < max; e = e.older) out.push([e.msgId, this.replyOf(e), e.atMs]);
    return out.reverse();
  }

  private forget(msgId: string): void {
    const entry = this.entries.get(msgId);
    if (entry !== undefined) this.unlink(entry);
  }

  private unlink(entry: Entry): void {
    this.entries.delete(entry.msgId);
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
