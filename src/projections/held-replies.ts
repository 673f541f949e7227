/**
 * The ring a reply memory holds its latest replies aside in until it is
 * first read (see `ReplyMemoryOptions.tail` in fold-store.ts): replies made
 * or events decoded as objects, and events still stored as bytes as plain
 * columns, with no object per event. A start's backlog worker holds every
 * event's reply here on a stream written moments ago; an object per event
 * (an entry and its payload's view), alive across 100,000 events, outlived
 * the young generation and cost a sixth of the fold in collections
 * (bench/backlog-fold.ts).
 */

/** Makes the entry of an event stored as `payload` at `seq`, remembered for `msgId`. */
export type StoredEntry<T> = (msgId: string, id: string, payload: Uint8Array, seq: number, atMs: number) => T;

/** Replies in the order they came, at most `capacity`, oldest first. */
export class HeldReplies<T> {
  /** An entry made as an object, or undefined where the slot is a stored event's columns. */
  private readonly entries: (T | undefined)[];
  private readonly msgIds: (string | undefined)[];
  private readonly ids: (string | undefined)[];
  private readonly buffers: (ArrayBufferLike | undefined)[];
  private readonly offsets: Float64Array;
  private readonly lengths: Float64Array;
  private readonly seqs: Float64Array;
  private readonly atMs: Float64Array;
  private start = 0;
  /** How many are held. */
  count = 0;

  constructor(readonly capacity: number) {
    this.entries = new Array<T | undefined>(capacity).fill(undefined);
    this.msgIds = new Array<string | undefined>(capacity).fill(undefined);
    this.ids = new Array<string | undefined>(capacity).fill(undefined);
    this.buffers = new Array<ArrayBufferLike | undefined>(capacity).fill(undefined);
    this.offsets = new Float64Array(capacity);
    this.lengths = new Float64Array(capacity);
    this.seqs = new Float64Array(capacity);
    this.atMs = new Float64Array(capacity);
  }

  /** Lets the oldest go (the caller counts it). */
  dropOldest(): void {
    this.clear(this.start);
    this.start = (this.start + 1) % this.capacity;
    this.count--;
  }

  /** Holds `entry` as the newest; the caller makes room first. */
  push(entry: T): void {
    this.entries[this.next()] = entry;
  }

  /** Holds the event stored as `payload` at `seq` as the newest, without an object of its own; the caller makes room first. */
  pushStored(msgId: string, id: string, payload: Uint8Array, seq: number, atMs: number): void {
    const at = this.next();
    this.msgIds[at] = msgId;
    this.ids[at] = id;
    this.buffers[at] = payload.buffer;
    this.offsets[at] = payload.byteOffset;
    this.lengths[at] = payload.length;
    this.seqs[at] = seq;
    this.atMs[at] = atMs;
  }

  /** Empties the ring, oldest first, each slot as an entry (`stored` makes a stored event's). */
  drain(visit: (entry: T) => void, stored: StoredEntry<T>): void {
    for (let i = 0; i < this.count; i++) {
      const at = (this.start + i) % this.capacity;
      const entry = this.entries[at];
      const buffer = this.buffers[at];
      if (entry !== undefined) visit(entry);
      else if (buffer !== undefined)
        visit(
          stored(
            this.msgIds[at]!,
            this.ids[at]!,
            new Uint8Array(buffer, this.offsets[at], this.lengths[at]),
            this.seqs[at]!,
            this.atMs[at]!,
          ),
        );
      this.clear(at);
    }
    this.start = 0;
    this.count = 0;
  }

  private next(): number {
    if (this.count === this.capacity) throw new Error("no room held for a reply");
    return (this.start + this.count++) % this.capacity;
  }

  private clear(at: number): void {
    this.entries[at] = undefined;
    this.msgIds[at] = undefined;
    this.ids[at] = undefined;
    this.buffers[at] = undefined;
  }
}
