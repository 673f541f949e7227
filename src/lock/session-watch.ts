/**
 * Which of a lock's session waiters' sessions have ended, found without
 * reading every session (docs/locks.md, "Waiting for a lock", cost per
 * event). A decision on a lock whose waiters wait under sessions must know
 * which of those sessions ended by its instant (it records them); reading
 * each waiter's session would cost the queue's length per event. The watch
 * keeps, per buffer of waiters (src/lock/waiter-queue.ts), the sessions its
 * places wait under by an end none of them can come before: a session's end
 * only moves later (a keepalive) until it is closed, and closes are read
 * from the session table's close log. So a decision reads only the sessions
 * whose kept end has passed, those closed since, and those new to the
 * buffer: O(log n) each, amortised over the events that moved them.
 */
import { MinHeap } from "../projections/min-heap.ts";
import { sessionEndMs, type CloseLog, type SessionLookup } from "../session/index.ts";
import { depth, queueWork } from "./waiter-index.ts";

/** A session lookup with the log of closes a watch needs. */
export type WatchedLookup = SessionLookup & { readonly closes: CloseLog };

/** The sessions of a window that ended: each with its end, ordered by its first place; and those places. */
export interface EndedSessions {
  readonly sessions: readonly (readonly [id: string, endMs: number])[];
  /** Buffer positions in the window whose session ended. */
  readonly places: readonly number[];
}

/** The sessions of one buffer's places by their end, as read from one lookup. */
export class SessionWatch {
  /** Sessions not known to have ended, by an end they cannot come before (entries of a session read again since are stale). */
  private readonly byEnd = new MinHeap<string>();
  /** Sessions found ended, with their end, while the buffer still has places under them. */
  private readonly ended = new Map<string, number>();
  /** Sessions the lookup does not know: a window with a place under one is read by walking it. */
  private readonly unknown = new Set<string>();
  /** Sessions new to the buffer since the last read. */
  private fresh: string[] = [];
  private mark: number;
  /** Windows starting before this may have places under sessions let go here: they are read by walking. */
  private prunedBelow = 0;

  constructor(
    readonly lookup: WatchedLookup,
    /** Buffer positions under each session, ascending (the buffer keeps it). */
    private readonly places: ReadonlyMap<string, readonly number[]>,
    now: number,
  ) {
    this.mark = lookup.closes.mark();
    this.readAll(now);
  }

  /** A session the buffer had no place under until now. */
  added(session: string): void {
    this.fresh.push(session);
  }

  /**
   * The sessions of the places in buffer positions [start, end) that ended by
   * `now`; undefined when the window must be walked (a session the lookup
   * does not know, or a window older than what the watch keeps).
   */
  endedIn(start: number, end: number, now: number): EndedSessions | undefined {
    if (start < this.prunedBelow) return undefined;
    const closed = this.lookup.closes.since(this.mark);
    this.mark = this.lookup.closes.mark();
    if (closed === undefined) this.readAll(now);
    else for (const id of closed) if (this.places.has(id)) this.read(id, now);
    for (const id of this.fresh) this.read(id, now);
    this.fresh = [];
    for (const id of [...this.unknown]) this.read(id, now);
    while (this.byEnd.size > 0 && this.byEnd.peekKey() <= now) {
      queueWork.steps += depth(this.byEnd.size);
      const id = this.byEnd.pop()!;
      if (this.places.has(id) && !this.ended.has(id)) this.read(id, now);
    }
    for (const id of this.unknown) if (firstIn(this.places.get(id), start, end) !== undefined) return undefined;
    // Each ended session with a place in the window: its first place's buffer position, id, end, and the index of that place.
    const found: [first: number, id: string, endMs: number, from: number][] = [];
    for (const [id, endMs] of [...this.ended]) {
      queueWork.steps++;
      // Ended is final, but a lookup is read again rather than trusted: what it says now is what a walk would read.
      const session = this.lookup.get(id);
      const endNow = session === undefined ? undefined : sessionEndMs(session);
      if (endNow !== endMs || endMs > now) {
        this.ended.delete(id);
        this.read(id, now);
        if (this.unknown.has(id) && firstIn(this.places.get(id), start, end) !== undefined) return undefined;
        if (!this.ended.has(id)) continue;
      }
      const places = this.places.get(id);
      const from = firstIn(places, start, end);
      if (from !== undefined) found.push([places![from]!, id, this.ended.get(id)!, from]);
      else if (places === undefined) {
        // Its end was applied to every place under it: no window finds it any more.
        this.ended.delete(id);
      } else if (places.at(-1)! < start) {
        // No window from here on has a place under it.
        this.ended.delete(id);
        this.prunedBelow = Math.max(this.prunedBelow, start);
      }
    }
    found.sort((a, b) => a[0] - b[0]);
    const places: number[] = [];
    for (const [, id, , from] of found) {
      const all = this.places.get(id)!;
      for (let k = from; k < all.length && all[k]! < end; k++) places.push(all[k]!);
    }
    queueWork.steps += places.length;
    return { sessions: found.map(([, id, endMs]) => [id, endMs] as const), places };
  }

  /** Reads every session of the buffer anew. */
  private readAll(now: number): void {
    this.ended.clear();
    this.unknown.clear();
    for (const id of this.places.keys()) this.read(id, now);
  }

  /** Reads one session: ended by `now`, unknown, or kept by its end. */
  private read(id: string, now: number): void {
    queueWork.steps++;
    const session = this.lookup.get(id);
    this.unknown.delete(id);
    if (session === undefined) {
      this.unknown.add(id);
      return;
    }
    const endMs = sessionEndMs(session);
    if (endMs <= now) this.ended.set(id, endMs);
    else {
      this.ended.delete(id);
      this.byEnd.push(endMs, id);
      queueWork.steps += depth(this.byEnd.size);
    }
  }
}

/** The index in ascending `places` of the first in [start, end), by halving; undefined when none is. */
function firstIn(places: readonly number[] | undefined, start: number, end: number): number | undefined {
  if (places === undefined) return undefined;
  let lo = 0;
  let hi = places.length;
  while (lo < hi) {
    queueWork.steps++;
    const mid = (lo + hi) >>> 1;
    if (places[mid]! < start) lo = mid + 1;
    else hi = mid;
  }
  return lo < places.length && places[lo]! < end ? lo : undefined;
}
