/**
 * The pure state of a kind projection: every id's folded record, the replies
 * its events owe, and the listeners told of each fold. No I/O: the follower
 * hands it stored messages in stream order, the actors of this instance their
 * own acknowledged events, and a per-id sequence guard makes each count once
 * (an append that passed the expected-sequence check cannot have skipped
 * anything on its subject).
 */
import { type StoredMessage } from "../events/event-log.ts";
import { baseMsgId } from "../events/envelope.ts";
import { requestOfMsgId, subjectOfMsgId } from "../events/envelope.ts";
import { isUnparsable, type HistoryEntry, type RecordedEvent } from "../events/envelope.ts";
import { decodeEvent } from "../events/decode.ts";
import { instantMs } from "../events/envelope.ts";
import { decodeToken } from "../contract/subjects.ts";
import type { FoldListener, KindFold, ProjectionRecord } from "./kind-fold.ts";
import { HeldReplies } from "./held-replies.ts";

/** Settings of a {@link FoldStore}. */
export interface FoldStoreOptions<State> {
  readonly fold: KindFold<State>;
  readonly replies?: ReplyMemoryLimits | undefined;
  /** The clock replies are judged past their horizon by. */
  readonly now: () => number;
  /** Whether `records` notes the ids set since the last snapshot (default true; a store answered whole needs not). */
  readonly trackChanges?: boolean;
  /** Hold the latest replies aside until first read (a store read whole at the end: the `tail` of reply-memory.ts). */
  readonly replyTail?: number;
  /** Told of an event skipped because its envelope names another entity than its subject (see {@link ForeignEvents}). */
  readonly onForeign?: (foreign: ForeignEvent) => void;
  /**
   * Remember a reply owed to a folded event by the event's bytes (the
   * message's payload, decoded again if a retry asks) rather than by the
   * decoded event: for a fold whose payloads are views of buffers it holds
   * anyway (a start's backlog worker, src/threads/message-batches.ts), where
   * keeping 100,000 decoded events alive across a fold made their objects
   * outlive the young generation, and collecting them cost more than
   * decoding the few asked for again (bench/backlog-fold.ts).
   */
  readonly repliesByBytes?: boolean;
}

/**
 * An event on one entity's subject whose envelope names another kind or id.
 * The service never writes one; whoever could publish it is outside the
 * contract, and folding it would let one entity's subject change another's
 * state (the twin of a lock whose name only a dropped byte-order mark told
 * apart). It is skipped: its sequence counts, its content does not.
 */
export interface ForeignEvent {
  readonly seq: number;
  /** The entity its subject names. */
  readonly id: string;
  /** What its envelope claims. */
  readonly envelopeKind: string;
  readonly envelopeId: string;
}

/** The warning logged for a skipped foreign event (`leasehold audit` reports each one under its `envelope` rule). */
export const FOREIGN_EVENT_WARNING = "event skipped: its envelope names another entity than its subject (leasehold audit lists it)";

/** How many foreign events a fold skipped, and the first of them (for one warning line). */
export class ForeignEvents {
  count = 0;
  first: ForeignEvent | undefined;

  note(foreign: ForeignEvent): void {
    if (this.count++ === 0) this.first = foreign;
  }
}

/** Where {@link FoldStore.foldOnto} puts a record it folded. */
export interface RecordSink<State> {
  set(id: string, record: ProjectionRecord<State>): unknown;
}

/** One kind's folded records by id, with the replies their events owe. */
export class FoldStore<State> {
  /** Every id with an event; change-tracked so snapshots write what changed. */
  readonly records: ChangeTrackedMap<string, ProjectionRecord<State>>;
  /** Replies remembered for requests' `requestId`s. */
  readonly replies: ReplyMemory;
  /** Replies own turns wait for. */
  readonly watched = new WatchedReplies();
  private readonly listeners: FoldListener<State>[] = [];

  constructor(private readonly options: FoldStoreOptions<State>) {
    this.records = new ChangeTrackedMap(options.trackChanges ?? true);
    const late = options.fold.lateReply;
    const render = late && ((id: string, recorded: RecordedEvent) => late.render(id, recorded));
    this.replies = new ReplyMemory(options.replies, render, { tail: options.replyTail });
  }

  /** Registers a listener called after every folded entry; returns what unregisters it. */
  onFold(listener: FoldListener<State>): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  /** One id's record (the initial state at sequence 0 when it has no events). */
  record(id: string): ProjectionRecord<State> {
    return this.records.get(id) ?? { state: this.options.fold.initialState(id), seq: 0, atMs: 0 };
  }

  /** One id's folded state. */
  get(id: string): State {
    return this.records.get(id)?.state ?? this.options.fold.initialState(id);
  }

  /** Replaces every folded state with `fn(id, state)`; returns how many changed. */
  compact(fn: (id: string, state: State) => State): number {
    let changed = 0;
    for (const [id, record] of this.records) {
      const state = fn(id, record.state);
      if (state !== record.state) {
        this.records.set(id, { ...record, state });
        changed++;
      }
    }
    return changed;
  }

  /** Applies an event this instance appended; ignored when the stream's fold got there first. */
  applyOwn(id: string, recorded: RecordedEvent, stateAfter: State, atMs: number, reply: unknown): void {
    const before = this.records.get(id);
    if (before !== undefined && before.seq >= recorded.seq) return;
    this.records.set(id, { state: stateAfter, seq: recorded.seq, atMs: Math.max(atMs, before?.atMs ?? 0) });
    this.noteReply(recorded, reply, atMs);
    this.tell(id, stateAfter, recorded);
  }

  /**
   * Folds one stored message of the kind (a subject leasehold does not write
   * moves nothing). `id` is its subject's id when the caller knows it already
   * (undefined: read from the subject; null: not a subject leasehold writes).
   */
  foldStored(message: StoredMessage, known?: string | null): void {
    const id = known === undefined ? idOfSubject(message.subject) : known;
    if (id !== null) this.foldOnto(id, this.records.get(id), message, this.records);
  }

  /**
   * Folds one stored message of `id` onto `before`, its record, and puts the
   * new record with `into` before any listener hears of it: `records`
   * itself, or the index of a caller that keeps the records by a number of
   * its own (a start's backlog worker, where an array read replaces two
   * lookups in a map of every id: 11 % of its fold at 100,000 ids) and
   * hands them to `records` at the end.
   */
  foldOnto(id: string, before: ProjectionRecord<State> | undefined, message: StoredMessage, into: RecordSink<State>): void {
    if (before !== undefined && before.seq >= message.seq) return; // this instance applied it already
    // Without its message id (read from the headers only when a reply is owed: see owesReply).
    const entry = decodeEvent(message.payload, message.seq);
    const { fold } = this.options;
    if (!isUnparsable(entry) && (entry.event.id !== id || entry.event.kind !== fold.kind)) {
      // Its sequence still counts: the next append on this subject expects it.
      into.set(id, { state: before?.state ?? fold.initialState(id), seq: message.seq, atMs: before?.atMs ?? 0 });
      this.options.onForeign?.({ seq: message.seq, id, envelopeKind: entry.event.kind, envelopeId: entry.event.id });
      return;
    }
    const state = fold.evolve(before?.state ?? fold.initialState(id), entry);
    const atMs = isUnparsable(entry) ? 0 : instantMs(entry.event.at);
    into.set(id, { state, seq: message.seq, atMs: Math.max(atMs, before?.atMs ?? 0) });
    if (!isUnparsable(entry) && message.msgId !== undefined && this.owesReply(entry, atMs, message)) {
      // A retry under a variant id answers for the request's own id.
      const msgId = baseMsgId(message.msgId);
      if (this.watched.size > 0 && this.watched.has(msgId)) {
        const recorded: RecordedEvent = { seq: entry.seq, event: entry.event, msgId };
        this.noteReply(recorded, fold.replyFor(state, recorded), atMs);
      } else if (fold.lateReply?.fits(state, entry) === true) {
        // Most replies are never asked for again: only the event is kept, and rendered if a retry asks (reply-memory.ts).
        if (this.options.repliesByBytes === true) this.replies.rememberStored(msgId, id, message.payload, message.seq, atMs);
        else this.replies.rememberEvent(msgId, id, entry, atMs, message.payload.length);
      } else {
        this.replies.remember(msgId, fold.replyFor(state, { seq: entry.seq, event: entry.event, msgId }), atMs);
      }
    }
    this.tell(id, state, entry);
  }

  /**
   * Whether the folded `entry` owes a reply worth keeping: one an own turn
   * watches for, or one its request asked for (`requestId`) that is not past
   * the reply horizon already (a start's backlog holds mostly such replies).
   */
  private owesReply(entry: RecordedEvent, atMs: number, message: StoredMessage): boolean {
    if (this.watched.size > 0 && message.msgId !== undefined && this.watched.has(baseMsgId(message.msgId))) return true;
    return entry.event.requestId !== undefined && !this.replies.outlived(atMs, this.options.now(), message.pending ?? 0);
  }

  private noteReply(recorded: RecordedEvent, reply: unknown, atMs: number): void {
    if (recorded.msgId === undefined) return;
    // A retry under a variant id answers for the request's own id.
    const msgId = baseMsgId(recorded.msgId);
    if (recorded.event.requestId !== undefined) this.replies.remember(msgId, reply, atMs);
    this.watched.note(msgId, { reply, seq: recorded.seq });
  }

  private tell(id: string, state: State, entry: HistoryEntry): void {
    for (const listener of this.listeners) listener(id, state, entry);
  }
}

/** The id of an event subject (`<prefix>.events.<kind>.<token>`); null when its token does not decode. */
export function idOfSubject(subject: string): string | null {
  try {
    return decodeToken(subject.slice(subject.lastIndexOf(".") + 1));
  } catch {
    return null;
  }
}

/*
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
  /** The event's bytes the reply is rendered from (decoded first), at sequence `seq`; undefined once rendered. */
  payload: Uint8Array | undefined;
  seq: number;
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

/** The entry of a reply owed to the event stored as `payload` at `seq`, to render when asked for. */
function storedEntry(msgId: string, id: string, payload: Uint8Array, seq: number, atMs: number): Entry {
  return newEntry(msgId, id, atMs, payload.length, undefined, undefined, payload, seq);
}

/**
 * A new entry for `msgId`, holding its reply or what it is rendered from (the
 * event, or the event's bytes at `seq`); `heldBytes` is what that holds. Every
 * entry is made here, so all have the same fields in the same order.
 */
function newEntry(
  msgId: string,
  id: string,
  atMs: number,
  heldBytes: number,
  reply: unknown,
  event: RecordedEvent | undefined,
  payload: Uint8Array | undefined,
  seq: number,
): Entry {
  return {
    msgId,
    atMs,
    bytes: msgId.length + heldBytes + 16,
    reply,
    event,
    payload,
    seq,
    id,
    n: 0,
    request: undefined,
    older: undefined,
    newer: undefined,
  };
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
  /** Replies held aside (see {@link ReplyMemoryOptions.tail}). */
  private readonly aside: HeldReplies<Entry> | undefined;
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
      this.aside = new HeldReplies<Entry>(options.tail);
    }
  }

  /** Remembers `reply` for `msgId` as the newest (remembering an id again moves it to the end). */
  remember(msgId: string, reply: unknown, atMs: number): void {
    this.take(newEntry(msgId, "", atMs, approximateSize(reply), reply, undefined, undefined, 0));
  }

  /**
   * Remembers for `msgId` the reply owed to `event`, an event of `id`, as
   * the newest, without making it: it is rendered when first asked for.
   * `eventBytes` (the event's encoded size) stands for what it holds.
   */
  rememberEvent(msgId: string, id: string, event: RecordedEvent, atMs: number, eventBytes: number): void {
    if (this.render === undefined) throw new Error("this reply memory renders no replies");
    this.take(newEntry(msgId, id, atMs, eventBytes, undefined, event, undefined, 0));
  }

  /**
   * As {@link rememberEvent}, for the event stored as `payload` at `seq`
   * (valid, as a fold decoded it): it is decoded again only when its reply
   * is first asked for.
   */
  rememberStored(msgId: string, id: string, payload: Uint8Array, seq: number, atMs: number): void {
    if (this.render === undefined) throw new Error("this reply memory renders no replies");
    const aside = this.aside;
    if (aside === undefined) return this.add(storedEntry(msgId, id, payload, seq, atMs));
    // Held aside as columns: no object per event until the memory is read.
    this.makeRoomAside(aside);
    aside.pushStored(msgId, id, payload, seq, atMs);
  }

  /** Adds `entry`, or holds it aside (letting the oldest held go when they are as many as the tail). */
  private take(entry: Entry): void {
    const aside = this.aside;
    if (aside === undefined) return this.add(entry);
    this.makeRoomAside(aside);
    aside.push(entry);
  }

  private makeRoomAside(aside: HeldReplies<Entry>): void {
    if (aside.count < aside.capacity) return;
    aside.dropOldest();
    this.asideLost = true;
    this.remembered++;
  }

  /**
   * Takes in the replies held aside, in order. When some were let go, the
   * result is exact only if one of those taken in was evicted by a bound:
   * each reply's fate depends only on the replies after it, so those taken
   * in alone passed the bound, and everything before them was evicted first.
   */
  private settle(): void {
    const aside = this.aside;
    if (aside === undefined || aside.count === 0) return;
    const first = this.remembered;
    aside.drain((entry) => this.add(entry), storedEntry);
    const lost = this.asideLost;
    this.asideLost = false;
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
    if (entry.payload !== undefined) {
      const decoded = decodeEvent(entry.payload, entry.seq);
      // It decoded as an event when it was folded: the same bytes cannot fail now.
      if (isUnparsable(decoded)) throw new Error(`a remembered event no longer decodes: ${decoded.reason}`);
      entry.event = decoded;
      entry.payload = undefined;
    }
    if (entry.event !== undefined) {
      entry.reply = this.render!(entry.id, entry.event);
      entry.event = undefined;
    }
    return entry.reply;
  }

  /** The entity the latest request remembered with `requestId` was for, if any. */
  idOfRequest(requestId: string): string | undefined {
    this.settle();
    const entry = this.byRequest.get(requestId);
    if (entry === undefined) return undefined;
    // A reply remembered as rendered carries no id; its message id starts with the event's subject, which names it.
    if (entry.id !== "") return entry.id;
    const subject = subjectOfMsgId(entry.msgId);
    return subject === undefined ? undefined : (idOfSubject(subject) ?? undefined);
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

/**
 * Replies an own turn waits for: a turn whose append's acknowledgement was
 * lost watches its message id, and learns from whichever fold sees the event
 * first (the follower's or its own) where it landed and what it owes.
 */

/** Where a watched message landed and the reply it owes. */
export interface WatchedReply {
  readonly reply: unknown;
  readonly seq: number;
}

/** Message ids watched by their own turns, and what each was found to owe once folded. */
export class WatchedReplies {
  private readonly watched = new Map<string, WatchedReply | null>();

  /** Whether anything is watched (the fold skips the header look otherwise). */
  get size(): number {
    return this.watched.size;
  }

  /** Starts noting where the event appended with `msgId` lands. */
  watch(msgId: string): void {
    if (!this.watched.has(msgId)) this.watched.set(msgId, null);
  }

  /** Whether `msgId` is watched. */
  has(msgId: string): boolean {
    return this.watched.has(msgId);
  }

  /** Notes where the watched `msgId` landed; ignored when nobody watches it. */
  note(msgId: string, found: WatchedReply): void {
    if (this.watched.has(msgId)) this.watched.set(msgId, found);
  }

  /** Where the watched `msgId` landed and the reply it owes, once folded. */
  found(msgId: string): WatchedReply | undefined {
    return this.watched.get(msgId) ?? undefined;
  }

  /** Stops watching `msgId`. */
  unwatch(msgId: string): void {
    this.watched.delete(msgId);
  }
}

/**
 * A Map that notes every key set since its `changed` was last cleared (the
 * ids a delta must carry), unless told not to: a start's backlog worker
 * answers all its records at once and writes no delta.
 */
export class ChangeTrackedMap<K, V> extends Map<K, V> {
  readonly changed = new Set<K>();
  private readonly tracking: boolean;
  constructor(tracking = true) {
    super();
    this.tracking = tracking;
  }
  override set(key: K, value: V): this {
    if (this.tracking) this.changed.add(key);
    return super.set(key, value);
  }

  /** Sets `key` as it was saved (a snapshot's record): not a change to save again. */
  setSaved(key: K, value: V): this {
    return super.set(key, value);
  }
}
