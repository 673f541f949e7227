/**
 * The parked acquires of one lock (./lock-waiters.ts), indexed so that a look
 * at the lock costs log n of their number: by place (the head's is found at
 * once), by turn (places before the head lapsed: granted or given up) and by
 * give-up instant. One timer per lock looks again when the queue may change
 * by time alone, when the earliest request gives up, and at least every
 * recheck; folds of the lock's events ask for a look, one per microtask.
 */
import type { Clock } from "../actors/clock.ts";
import type { Waiting } from "./waiters.ts";
import { MinHeap } from "../projections/min-heap.ts";

/** A parked request as its lock's index holds it. */
export interface Parked {
  readonly waiting: Waiting;
  /** Ends its current park, if it is parked (a request looking or claiming looks again by itself). */
  rouse(): void;
}

/** What a look at the lock says at an instant. */
export interface LockLook {
  /** The head's place, null with nobody waiting. */
  readonly headPlace: number | null;
  readonly headMayClaim: boolean;
  /** The next instant the queue may change by time alone (Infinity: none). */
  readonly nextChangeAt: number;
}

/** Settings of {@link ParkedWaiters}. */
export interface ParkedWaitersOptions {
  /** Reads the lock's queue at `now`. */
  readonly look: (now: number) => LockLook;
  readonly clock: Clock;
  readonly monotonic: () => number;
  readonly recheckMs: number;
  /** When a parked request stops waiting on the clock, as known now (its give-up instant, or its session's end). */
  readonly dueAt: (parked: Parked) => number;
  /** Told the number of index entries and parked requests each look read. */
  readonly count?: ((reads: number) => void) | undefined;
}

class Entry implements Parked {
  wake: (() => void) | undefined;
  inTurns = false;
  inDeadlines = false;
  done = false;
  constructor(readonly waiting: Waiting) {}
  rouse(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/** One lock's parked requests and its one timer. */
export class ParkedWaiters {
  private readonly byPlace = new Map<number, Set<Entry>>();
  private readonly byTurn = new MinHeap<Entry>();
  private readonly byDeadline = new MinHeap<Entry>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** When the armed timer fires, on the timer clock. */
  private timerMono = Infinity;
  private nextChangeAt = Infinity;
  private lookPending = false;
  private closed = false;
  private count = 0;

  constructor(private readonly options: ParkedWaitersOptions) {}

  /** Requests registered. */
  get size(): number {
    return this.count;
  }

  /** Registers a waiting request (it parks with {@link park}). */
  add(waiting: Waiting): Parked {
    const entry = new Entry(waiting);
    let set = this.byPlace.get(waiting.place);
    if (set === undefined) this.byPlace.set(waiting.place, (set = new Set()));
    set.add(entry);
    this.count++;
    this.index(entry);
    return entry;
  }

  /** Forgets a request whose wait ended; index entries it leaves are dropped when they come up. */
  remove(parked: Parked): void {
    const entry = parked as Entry;
    entry.done = true;
    entry.rouse();
    const set = this.byPlace.get(entry.waiting.place);
    set?.delete(entry);
    if (set?.size === 0) this.byPlace.delete(entry.waiting.place);
    this.count--;
  }

  /**
   * Parks a request until a look wakes it; `lookedAt` is the instant its
   * wait was last decided at, from which the lock's first timer is set.
   */
  park(parked: Parked, lookedAt: number): Promise<void> {
    const entry = parked as Entry;
    const parkedOn = new Promise<void>((resolve) => (entry.wake = resolve));
    this.index(entry);
    if (this.timer === undefined) this.arm(this.options.look(lookedAt).nextChangeAt);
    else if (this.monoDue(entry) < this.timerMono) this.arm(this.nextChangeAt);
    return parkedOn;
  }

  /** Looks at the lock in this microtask's end (many folds in a row make one look). */
  lookSoon(): void {
    if (this.lookPending || this.closed) return;
    this.lookPending = true;
    queueMicrotask(() => {
      this.lookPending = false;
      if (!this.closed) this.lookNow();
    });
  }

  /** Wakes every parked request (the instance is stopping). */
  rouseAll(): void {
    for (const set of this.byPlace.values()) for (const entry of set) entry.rouse();
  }

  /** Stops the timer (no request is left). */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * Wakes the head when it may take the lock, every request whose place is
   * before the head (it lapsed) and every one whose give-up instant came,
   * then sets the timer.
   */
  private lookNow(): void {
    const { clock, monotonic, dueAt } = this.options;
    const now = clock.now();
    const look = this.options.look(now);
    let reads = 1;
    if (look.headPlace !== null && look.headMayClaim) {
      for (const entry of this.byPlace.get(look.headPlace) ?? []) {
        reads++;
        entry.rouse();
      }
    }
    const headPlace = look.headPlace ?? Infinity;
    while (this.byTurn.peekKey() < headPlace) {
      const entry = this.byTurn.pop()!;
      reads++;
      entry.inTurns = false;
      entry.rouse();
    }
    const mono = monotonic();
    for (;;) {
      const entry = this.byDeadline.peek();
      if (entry === undefined || !(entry.done || this.byDeadline.peekKey() <= now || entry.waiting.giveUpMono <= mono)) break;
      this.byDeadline.pop();
      reads++;
      entry.inDeadlines = false;
      if (entry.done) continue;
      // A session's end moves with its keepalives: one that moved on is put back under its new instant.
      const due = dueAt(entry);
      if (due > now && entry.waiting.giveUpMono > mono) this.pushDeadline(entry, due);
      else entry.rouse();
    }
    this.options.count?.(reads);
    this.arm(look.nextChangeAt);
  }

  /** Puts a request back in the turn and deadline indexes it was taken out of. */
  private index(entry: Entry): void {
    if (entry.done) return;
    if (!entry.inTurns) {
      entry.inTurns = true;
      this.byTurn.push(entry.waiting.place, entry);
    }
    if (!entry.inDeadlines) this.pushDeadline(entry, this.options.dueAt(entry));
  }

  private pushDeadline(entry: Entry, due: number): void {
    entry.inDeadlines = true;
    this.byDeadline.push(due, entry);
  }

  /** When a request stops waiting, on the timer clock. */
  private monoDue(entry: Entry): number {
    const { clock, monotonic, dueAt } = this.options;
    return Math.min(monotonic() + (dueAt(entry) - clock.now()), entry.waiting.giveUpMono);
  }

  /**
   * Sets the one timer: at the queue's next change, the earliest give-up
   * (on either clock) or the recheck, whichever is first. The delay is
   * measured from a fresh reading of the clock, the instants from the look.
   */
  private arm(nextChangeAt: number): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.closed || this.count === 0) return;
    const { clock, monotonic, recheckMs } = this.options;
    this.nextChangeAt = nextChangeAt;
    const first = this.byDeadline.peek();
    const mono = monotonic();
    const at = Math.min(nextChangeAt, this.byDeadline.peekKey());
    const delayMs = Math.max(0, Math.min(at - clock.now(), (first?.waiting.giveUpMono ?? Infinity) - mono, recheckMs));
    this.timerMono = mono + delayMs;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.lookNow();
    }, Math.ceil(delayMs));
  }
}
