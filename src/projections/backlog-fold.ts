/**
 * The fold a start's backlog worker runs (src/service/backlog-worker.ts),
 * without the thread: messages in stream order, each with its subject's
 * number from the batch (see src/threads/message-batches.ts), folded with a
 * {@link FoldStore}'s own fold, and answered as one snapshot part.
 *
 * It keeps the records in an array by slot, one slot per id, and each
 * subject number's slot, so a message costs an array read where the store's
 * map of every id cost two lookups (a get and a set: 11 % of the fold at
 * 100,000 ids, most of it cache misses). The store's map gets them once, at
 * the end. A slot is per id, not per subject number: two subjects of one
 * id (the numbering started again, or tokens that decode alike) share one.
 *
 * The replies its events owe are kept by their events and held aside in the
 * order they came until the part is made (reply-memory.ts, `tail`): on a
 * stream written moments ago every event owes one, and a lookup and an
 * eviction in a map of 100,000 message ids per event cost 3.4 of the 20
 * seconds the fold of 1,000,000 events took.
 */
import type { StoredMessage } from "../events/event-log.ts";
import { FoldStore, ForeignEvents, idOfSubject, type RecordSink } from "./fold-store.ts";
import { recordsOf } from "./incremental-snapshots.ts";
import type { BacklogExtra, KindFold, ProjectionRecord } from "./kind-fold.ts";
import type { SnapshotPart } from "./projection-snapshots.ts";
import { DEFAULT_MAX_REPLIES, type ReplyMemoryLimits } from "./fold-store.ts";

/** A subject that is not one leasehold writes: nothing to fold. */
const NO_SLOT = -1;

/** The records by slot, and the slot the next `set` writes (what {@link FoldStore.foldOnto} puts into). */
class SlotRecords<State> implements RecordSink<State> {
  readonly records: (ProjectionRecord<State> | undefined)[] = [];
  slot = 0;
  set(_id: string, record: ProjectionRecord<State>): void {
    this.records[this.slot] = record;
  }
}

/** One kind's backlog, folded message by message. */
export class BacklogFold<State> {
  private readonly store: FoldStore<State>;
  private readonly slots = new SlotRecords<State>();
  /** Ids by slot. */
  private readonly ids: string[] = [];
  private readonly slotOfId = new Map<string, number>();
  /** Slots by subject number; void once the numbering starts again. */
  private slotOfSubject: number[] = [];
  private numbering = 0;
  /** The kind's extras, built from the same entries (see KindFold.backlogExtras). */
  private readonly extras = new Map<string, BacklogExtra>();
  /** Events skipped as another entity's (reported with the answer: the main thread logs them). */
  readonly foreign = new ForeignEvents();
  /** The last sequence folded: what the part covers. */
  private lastSeq = 0;

  constructor(
    private readonly fold: KindFold<State>,
    replies: ReplyMemoryLimits,
    nowMs: number,
  ) {
    // It answers every record at once (one snapshot part): nothing to note for a delta, and no reply asked for before.
    const replyTail = Math.ceil((replies.maxEntries ?? DEFAULT_MAX_REPLIES) * 1.25) + 1024;
    this.store = new FoldStore({
      fold,
      replies,
      now: () => nowMs,
      trackChanges: false,
      replyTail,
      // Its payloads are views of the batches' buffers: a reply remembered by them keeps no decoded event alive.
      repliesByBytes: true,
      onForeign: (f) => this.foreign.note(f),
    });
    for (const [name, make] of Object.entries(fold.backlogExtras ?? {})) {
      const extra = make();
      this.extras.set(name, extra);
      this.store.onFold((id, _state, entry) => extra.fold(id, entry));
    }
  }

  /** Folds `m`, whose subject has number `subject` in the numbering started `numbering` times so far. */
  step(m: StoredMessage, subject: number, numbering: number): void {
    if (numbering !== this.numbering) [this.slotOfSubject, this.numbering] = [[], numbering];
    let slot = this.slotOfSubject[subject];
    if (slot === undefined) this.slotOfSubject[subject] = slot = this.slotOf(m.subject);
    this.lastSeq = m.seq;
    if (slot === NO_SLOT) return;
    this.slots.slot = slot;
    this.store.foldOnto(this.ids[slot]!, this.slots.records[slot], m, this.slots);
  }

  private slotOf(subject: string): number {
    const id = idOfSubject(subject);
    if (id === null) return NO_SLOT;
    let slot = this.slotOfId.get(id);
    if (slot === undefined) {
      slot = this.ids.push(id) - 1;
      this.slotOfId.set(id, slot);
    }
    return slot;
  }

  /**
   * What was folded as one snapshot part: its sequence is the last one
   * folded (the read may end short of the job's; the projection follows
   * from there).
   */
  part(): SnapshotPart {
    const { records, replies } = this.store;
    this.ids.forEach((id, slot) => {
      const record = this.slots.records[slot];
      if (record !== undefined) records.set(id, record);
    });
    return {
      seq: this.lastSeq,
      records: recordsOf(records, records.keys(), this.fold),
      replies: replies.latest(replies.size.entries),
      extras: Object.fromEntries([...this.extras].map(([name, extra]) => [name, extra.save()])),
    };
  }
}
