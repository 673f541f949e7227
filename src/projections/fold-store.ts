/**
 * The pure state of a kind projection: every id's folded record, the replies
 * its events owe, and the listeners told of each fold. No I/O: the follower
 * hands it stored messages in stream order, the actors of this instance their
 * own acknowledged events, and a per-id sequence guard makes each count once
 * (an append that passed the expected-sequence check cannot have skipped
 * anything on its subject).
 */
import { baseMsgId, type StoredMessage } from "../events/event-log.ts";
import { decodeEvent, isUnparsable, type HistoryEntry, type RecordedEvent } from "../events/envelope.ts";
import { instantMs } from "../events/instant.ts";
import { decodeToken } from "../contract/subject-token.ts";
import { ChangeTrackedMap } from "./incremental-snapshots.ts";
import type { FoldListener, KindFold, ProjectionRecord } from "./kind-fold.ts";
import { ReplyMemory, type ReplyMemoryLimits } from "./reply-memory.ts";
import { WatchedReplies } from "./watched-replies.ts";

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

  /** Registers a listener called after every folded entry. */
  onFold(listener: FoldListener<State>): void {
    this.listeners.push(listener);
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
        this.replies.rememberEvent(msgId, id, entry, atMs, message.payload.length);
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
