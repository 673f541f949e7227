/**
 * A lock's wait queue as a persistent structure (docs/locks.md, "Waiting
 * for a lock", what a queue costs): a window [start, end) of a buffer that only grows, shared by
 * the states of one lock's history. A join appends in place when the queue
 * is the buffer's latest (the fold's case), so an older state still reads
 * its own window; a join on an older state copies. The head's leaving moves
 * `start`; the dead prefix is dropped by a copy at a join once it outgrows
 * the window (amortised against the waiters that left). Taking out a place
 * other than the head copies; the decider never writes such a grant (only
 * the head in its claim window takes the lock from the queue), so only a
 * history the audit flags pays it. Past {@link INDEXED_FROM} waiters the
 * buffer keeps indexes (src/lock/waiter-index.ts), so that finding the
 * next waiter still waiting, counting those still waiting and finding a
 * requestId's place take O(log n), not a walk of the queue; a queue made for
 * one reading keeps none, as building them would cost more than the walks it
 * saves. A decision reads its session waiters through the same buffer, each
 * bounded by its session's end as it is read (src/lock/session-watch.ts
 * finds the sessions that ended), and a recorded session end is applied to
 * that session's places in the buffer itself, when the queue is its latest.
 */
import { queueWork, WaiterIndex } from "./waiter-index.ts";
import { SessionWatch, type EndedSessions, type WatchedLookup } from "./session-watch.ts";
import { sessionEndMs, type SessionLookup } from "../session/index.ts";

/** One place in the queue, as its `LockWaiterQueued` recorded it. */
export interface LockWaiter {
  /** Stream sequence of the `LockWaiterQueued`: the place's identity and its order. */
  readonly seq: number;
  readonly owner: string;
  /** The requestId of the request that joined, or null: a retry with it keeps the place. */
  readonly requestId: string | null;
  /** When the wait ends (epoch ms); its ISO form is rendered where a reply needs it. */
  readonly untilMs: number;
  /** How long this waiter may take to claim the lock once it is head and the lock is free. */
  readonly claimWindowMs: number;
  /** When it joined (the event's instant). */
  readonly joinedAtMs: number;
  /** The session the acquire waits under while its end is not known to the lock; absent otherwise. */
  readonly session?: string;
}

/** Windows shorter than this are read by walking them (a bounded walk); longer ones through the buffer's indexes. */
export const INDEXED_FROM = 32;

/** The buffer a lock's queues share. */
class Buffer {
  readonly items: LockWaiter[] = [];
  /** Session waiters in items[0..i): `sessions[i]`. */
  readonly sessions: number[] = [0];
  /** Every place's seq is above the one before (stream order): places are found by halving. */
  ordered = true;
  private index: WaiterIndex | undefined;
  /** Buffer positions by the session their waiter waits under, ascending: kept from the first reading with sessions on. */
  private places: Map<string, number[]> | undefined;
  private watch: SessionWatch | undefined;
  /** Waiters as their join recorded them, at the positions whose session's end was applied in place. */
  private readonly joined = new Map<number, LockWaiter>();
  /** Positions whose session's end was applied in place, as a Fenwick tree (1-based), grown by doubling. */
  private unsessioned = new Int32Array(0);

  /** `indexable`: a long window reads through indexes (else by walking: a buffer for one reading). */
  constructor(readonly indexable = true) {}

  append(w: LockWaiter): void {
    const last = this.items.at(-1);
    if (last !== undefined && w.seq <= last.seq) this.ordered = false;
    this.items.push(w);
    this.sessions.push(this.sessions.at(-1)! + (w.session === undefined ? 0 : 1));
    this.index?.added();
    if (this.places === undefined) return;
    this.fitUnsessioned();
    if (w.session !== undefined) this.placeUnder(w.session, this.items.length - 1);
  }

  /** Session waiters in positions [start, end). */
  sessionWaiters(start: number, end: number): number {
    return this.sessions[end]! - this.sessions[start]! - (this.unsessionedBefore(end) - this.unsessionedBefore(start));
  }

  /** The waiter at position `i` as its join recorded it (before any session's end was applied to it). */
  joinedAt(i: number): LockWaiter | undefined {
    return this.joined.get(i) ?? this.items[i];
  }

  /**
   * Applies the ends of sessions to the waiters in positions [start, end)
   * that wait under them, in place: each waits until its session's end at
   * the latest, and no longer under it. O(log n) a waiter, found by the
   * places of its session. Whether anything changed.
   */
  endSessions(start: number, end: number, endOf: ReadonlyMap<string, number>): boolean {
    const places = this.sessionPlaces();
    let changed = false;
    for (const [id, endMs] of endOf) {
      const all = places.get(id);
      if (all === undefined) continue;
      const kept: number[] = [];
      for (const i of all) {
        if (i < start || i >= end) kept.push(i);
        else this.endSession(i, endMs);
      }
      queueWork.steps += all.length;
      if (kept.length === all.length) continue;
      changed = true;
      if (kept.length === 0) places.delete(id);
      else places.set(id, kept);
    }
    return changed;
  }

  private endSession(i: number, endMs: number): void {
    const w = this.items[i]!;
    if (!this.joined.has(i)) this.joined.set(i, w);
    this.items[i] = afterSessionEnd(w, endMs);
    if (endMs < w.untilMs) this.index?.lowered(i);
    this.addUnsessioned(i);
  }

  /** Grows the tree of positions whose session's end was applied to fit every position: by doubling, amortised over the appends. */
  private fitUnsessioned(): void {
    if (this.unsessioned.length > this.items.length) return;
    const size = Math.max(16, 2 * this.items.length);
    this.unsessioned = new Int32Array(size + 1);
    for (const j of this.joined.keys()) this.addUnsessioned(j);
    queueWork.steps += size;
  }

  private addUnsessioned(i: number): void {
    for (let j = i + 1; j < this.unsessioned.length; j += j & -j) {
      this.unsessioned[j]!++;
      queueWork.steps++;
    }
  }

  private unsessionedBefore(i: number): number {
    let sum = 0;
    for (let j = Math.min(i, this.unsessioned.length - 1); j > 0; j -= j & -j) {
      sum += this.unsessioned[j]!;
      queueWork.steps++;
    }
    return sum;
  }

  /** Positions by session, built at the first reading or application of sessions' ends (O(n) once), then kept by each append. */
  private sessionPlaces(): Map<string, number[]> {
    if (this.places === undefined) {
      this.places = new Map();
      this.items.forEach((w, i) => w.session !== undefined && this.placeUnder(w.session, i));
      queueWork.steps += this.items.length;
      this.fitUnsessioned();
    }
    return this.places;
  }

  /** The watch of this buffer's sessions as `lookup` gives them (made at the first reading with it, O(n) once). */
  watchFor(lookup: WatchedLookup, now: number): SessionWatch {
    if (this.watch?.lookup !== lookup) this.watch = new SessionWatch(lookup, this.sessionPlaces(), now);
    return this.watch;
  }

  private placeUnder(session: string, i: number): void {
    const places = this.places!.get(session);
    if (places !== undefined) places.push(i);
    else {
      this.places!.set(session, [i]);
      this.watch?.added(session);
    }
  }

  /** The indexes, built at the first read of a long window (O(n) once), then kept up by each append. */
  indexed(): WaiterIndex {
    if (this.index === undefined) {
      queueWork.steps += this.items.length;
      this.index = new WaiterIndex(this.items);
    }
    return this.index;
  }
}

/** A lock's waiters in the order they joined: read by head, place, seq and count; changed only into new queues. */
export class WaiterQueue implements Iterable<LockWaiter> {
  /** The queue of every lock nobody waits for: one, not one per lock. */
  static readonly EMPTY = new WaiterQueue(new Buffer(), 0, 0);

  readonly #buffer: Buffer;
  readonly #start: number;
  readonly #end: number;
  /** Set on a queue read with its sessions' ends (for one decision): each waiter is read bounded by its session's end. */
  readonly #reading: SessionReading | undefined;

  private constructor(buffer: Buffer, start: number, end: number, reading?: SessionReading) {
    this.#buffer = buffer;
    this.#start = start;
    this.#end = end;
    this.#reading = reading;
  }

  /**
   * This queue as read at `now` with its session waiters' sessions from
   * `sessions` (docs/locks.md, "Session leases"): each waiter's wait ends at
   * its session's end at the latest, and the sessions that ended by `now`,
   * in the order of their first places, are given with their ends (what a
   * decision records). No waiter is copied: each is bounded as it is read,
   * and the sessions that ended are found by the buffer's watch
   * (src/lock/session-watch.ts). Undefined when the lookup keeps no log of
   * closes, or the watch cannot say (the caller walks the queue).
   */
  readWithSessions(
    sessions: SessionLookup,
    now: number,
  ): { readonly queue: WaiterQueue; readonly ended: EndedSessions["sessions"] } | undefined {
    if (sessions.closes === undefined || this.#reading !== undefined || this.length === 0) return undefined;
    const found = this.#buffer.watchFor(sessions as WatchedLookup, now).endedIn(this.#start, this.#end, now);
    if (found === undefined) return undefined;
    const reading = new SessionReading(sessions, found.places);
    return { queue: new WaiterQueue(this.#buffer, this.#start, this.#end, reading), ended: found.sessions };
  }

  /** The waiter at buffer position `i`, as this queue reads it. */
  #read(i: number): LockWaiter {
    const w = this.#buffer.items[i]!;
    return this.#reading === undefined ? w : this.#reading.bound(i, w);
  }

  /**
   * A queue of `waiters` in their order ({@link WaiterQueue.EMPTY} when there
   * are none); `forOneReading` makes one that keeps no indexes (read by
   * walking), for a state read once and let go.
   */
  static from(waiters: Iterable<LockWaiter>, forOneReading = false): WaiterQueue {
    const buffer = new Buffer(!forOneReading);
    for (const w of waiters) buffer.append(w);
    queueWork.steps += buffer.items.length;
    return buffer.items.length === 0 ? WaiterQueue.EMPTY : new WaiterQueue(buffer, 0, buffer.items.length);
  }

  /** Is this queue read by walking it (short, or made for one reading)? */
  get #walks(): boolean {
    return this.length < INDEXED_FROM || !this.#buffer.indexable;
  }

  /** Waiters in the queue. */
  get length(): number {
    return this.#end - this.#start;
  }

  /** The first waiter, if any. */
  get head(): LockWaiter | undefined {
    return this.at(0);
  }

  /** The waiter at place `i` from the head (0 the head), if any. */
  at(i: number): LockWaiter | undefined {
    return i >= 0 && i < this.length ? this.#read(this.#start + i) : undefined;
  }

  *[Symbol.iterator](): Iterator<LockWaiter> {
    for (let i = this.#start; i < this.#end; i++) {
      queueWork.steps++;
      yield this.#read(i);
    }
  }

  /** The waiters as an array (a copy: for tools, tests and snapshots, not for a request's path). */
  toArray(): LockWaiter[] {
    queueWork.steps += this.length;
    if (this.#reading !== undefined) return [...this];
    return this.#buffer.items.slice(this.#start, this.#end);
  }

  /** A queue serialises as its array (status and replay JSON). */
  toJSON(): LockWaiter[] {
    return this.toArray();
  }

  /** Each waiter mapped, in order (a walk). */
  map<T>(f: (w: LockWaiter, i: number) => T): T[] {
    return this.toArray().map(f);
  }

  /** Waiters whose acquire waits under a session, counted without a walk. */
  get sessionWaiters(): number {
    return this.#buffer.sessionWaiters(this.#start, this.#end);
  }

  /**
   * The queue with the recorded ends of sessions applied (`endOf`, by session
   * id): each waiter under one waits until its session's end at the latest,
   * and no longer under it. In place when this queue is its buffer's latest
   * (the fold's case: O(log n) a waiter, the places found by session; the
   * waiters change only as they will for every later reading, a session's
   * end being final once recorded), else on a copy.
   */
  withSessionsEnded(endOf: ReadonlyMap<string, number>): WaiterQueue {
    if (this.sessionWaiters === 0) return this;
    const buffer = this.#buffer;
    if (this.#reading === undefined && buffer.indexable && this.#end === buffer.items.length) {
      return buffer.endSessions(this.#start, this.#end, endOf) ? new WaiterQueue(buffer, this.#start, this.#end) : this;
    }
    let changed = false;
    const waiters = this.map((w): LockWaiter => {
      const end = w.session === undefined ? undefined : endOf.get(w.session);
      if (end === undefined) return w;
      changed = true;
      return afterSessionEnd(w, end);
    });
    return changed ? WaiterQueue.from(waiters) : this;
  }

  /** The place of the waiter queued at `seq` (-1 when none): by halving. */
  indexOfSeq(seq: number): number {
    const items = this.#buffer.items;
    if (!this.#buffer.ordered) {
      for (let i = this.#start; i < this.#end; i++) {
        queueWork.steps++;
        if (items[i]!.seq === seq) return i - this.#start;
      }
      return -1;
    }
    let lo = this.#start;
    let hi = this.#end;
    while (lo < hi) {
      queueWork.steps++;
      const mid = (lo + hi) >>> 1;
      if (items[mid]!.seq < seq) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.#end && items[lo]!.seq === seq ? lo - this.#start : -1;
  }

  /**
   * The first place from `from` whose waiter's `until` or join is after
   * `t`, else `length`: the waiters skipped would leave the head at once at `t`.
   */
  firstAfter(from: number, t: number): number {
    let found = this.#firstAfterRecorded(from, t);
    // A reading's waiters end by their sessions' ends: a place found by its recorded `until` may leave at once all the same.
    while (this.#reading !== undefined && found < this.length) {
      const w = this.at(found)!;
      if (w.untilMs > t || w.joinedAtMs > t) break;
      found = this.#firstAfterRecorded(found + 1, t);
    }
    return found;
  }

  /** {@link firstAfter} by the waiters as recorded (a reading's bounds only bring an `until` earlier). */
  #firstAfterRecorded(from: number, t: number): number {
    const items = this.#buffer.items;
    const begin = this.#start + Math.max(0, from);
    if (this.#walks) {
      for (let i = begin; i < this.#end; i++) {
        queueWork.steps++;
        if (items[i]!.untilMs > t || items[i]!.joinedAtMs > t) return i - this.#start;
      }
      return this.length;
    }
    return this.#buffer.indexed().firstAfter(begin, this.#end, t) - this.#start;
  }

  /** Waiters whose `until` is after `now` (still waiting, wherever they stand), counted in O(log n). */
  waitingAt(now: number): number {
    const items = this.#buffer.items;
    if (this.#walks) {
      let n = 0;
      for (let i = this.#start; i < this.#end; i++) {
        queueWork.steps++;
        if (this.#read(i).untilMs > now) n++;
      }
      return n;
    }
    let n = this.#buffer.indexed().waitingAt(this.#start, this.#end, now);
    // A reading's waiters whose session ended: counted by their recorded `until`, not waiting by their session's end.
    for (const i of this.#reading?.endedPlaces ?? []) {
      queueWork.steps++;
      if (i >= this.#start && i < this.#end && items[i]!.untilMs > now && this.#read(i).untilMs <= now) n--;
    }
    return n;
  }

  /** The first waiter still waiting at `now` that `owner` joined with `requestId`. */
  joinedBy(requestId: string, owner: string, now: number): LockWaiter | undefined {
    const matches = (w: LockWaiter) => w.requestId === requestId && w.owner === owner && w.untilMs > now;
    if (this.#walks) {
      for (let i = this.#start; i < this.#end; i++) {
        queueWork.steps++;
        if (matches(this.#read(i))) return this.#read(i);
      }
      return undefined;
    }
    for (const i of this.#buffer.indexed().joinedBy(requestId)) {
      queueWork.steps++;
      if (i >= this.#start && i < this.#end && matches(this.#read(i))) return this.#read(i);
    }
    return undefined;
  }

  /**
   * The queue with `w` joined last: in place when this queue is its
   * buffer's latest; shared when a later queue of the buffer joined the same
   * waiter next (one event folded twice from one state: the runtime's turn
   * and the projection's follower); else on a copy.
   */
  push(w: LockWaiter): WaiterQueue {
    const buffer = this.#buffer;
    queueWork.steps++;
    // A reading is for one decision; a join on it (none is made) starts a queue of its own.
    if (this.#reading !== undefined) return WaiterQueue.from([...this, w]);
    if (this !== WaiterQueue.EMPTY && sameWaiter(buffer.joinedAt(this.#end), w)) return new WaiterQueue(buffer, this.#start, this.#end + 1);
    const atTip = this !== WaiterQueue.EMPTY && this.#end === buffer.items.length && buffer.indexable;
    // A dead prefix longer than the window is dropped now, by a copy the waiters that left have paid for.
    if (!atTip || this.#start > Math.max(this.length, INDEXED_FROM)) return WaiterQueue.from([...this, w]);
    buffer.append(w);
    return new WaiterQueue(buffer, this.#start, this.#end + 1);
  }

  /** The queue without its first `n` waiters. */
  dropFront(n: number): WaiterQueue {
    if (n <= 0) return this;
    return n >= this.length ? WaiterQueue.EMPTY : new WaiterQueue(this.#buffer, this.#start + n, this.#end, this.#reading);
  }

  /** The queue without the waiter at place `i`: the head's leaving moves the start, any other place's copies. */
  without(i: number): WaiterQueue {
    if (i < 0 || i >= this.length) return this;
    if (i === 0) return this.dropFront(1);
    const kept = this.toArray();
    kept.splice(i, 1);
    return WaiterQueue.from(kept);
  }
}

/** Are `a` and `b` the same place, joined alike (the same event folded twice)? */
function sameWaiter(a: LockWaiter | undefined, b: LockWaiter): boolean {
  return (
    a !== undefined &&
    a.seq === b.seq &&
    a.owner === b.owner &&
    a.requestId === b.requestId &&
    a.untilMs === b.untilMs &&
    a.claimWindowMs === b.claimWindowMs &&
    a.joinedAtMs === b.joinedAtMs &&
    a.session === b.session
  );
}

/** A waiter once its session's end `endMs` is recorded: no longer under the session, waiting until that end at the latest. */
function afterSessionEnd(w: LockWaiter, endMs: number): LockWaiter {
  const { session: _ended, ...rest } = w;
  return { ...rest, untilMs: Math.min(w.untilMs, endMs) };
}

/** A waiter as read while its session ends at `endMs`: still under it, waiting until that end at the latest (itself when it waits less). */
export function boundedBySession(w: LockWaiter, endMs: number): LockWaiter {
  return endMs >= w.untilMs ? w : { ...w, untilMs: endMs };
}

/** How one reading bounds its waiters by their sessions' ends: read from the lookup as each waiter is read, once. */
class SessionReading {
  /** Bounded waiters by buffer position: one object per waiter, so a waiter read twice is the same one. */
  readonly #bounded = new Map<number, LockWaiter>();

  constructor(
    private readonly sessions: SessionLookup,
    /** Buffer positions whose session ended by the reading's instant. */
    readonly endedPlaces: readonly number[],
  ) {}

  /** The waiter at buffer position `i`, its wait ending at its session's end at the latest (an unknown session: its own). */
  bound(i: number, w: LockWaiter): LockWaiter {
    if (w.session === undefined) return w;
    let bounded = this.#bounded.get(i);
    if (bounded === undefined) {
      queueWork.steps++;
      const session = this.sessions.get(w.session);
      bounded = boundedBySession(w, session === undefined ? w.untilMs : sessionEndMs(session));
      this.#bounded.set(i, bounded);
    }
    return bounded;
  }
}
