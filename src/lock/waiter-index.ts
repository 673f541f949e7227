/**
 * The indexes a lock's wait queue keeps over its shared buffer of waiters
 * (src/lock/waiter-queue.ts), so that no read or fold step of the
 * queue walks it: which waiter is the next one still waiting at an instant
 * (a tree of maxima by place), how many of a window's waiters are still
 * waiting at an instant (a sweep over their ends, with a Fenwick tree of the
 * places whose end has passed), and which places a requestId joined. Each
 * answers in O(log n); an append costs O(log n) amortised. The buffer is
 * append-only, so a window of it (one state's queue) reads the same however
 * many waiters a later state appended.
 */
import { MinHeap } from "../projections/min-heap.ts";

/** What the indexes read of a waiter. */
export interface IndexedWaiter {
  readonly untilMs: number;
  readonly joinedAtMs: number;
  readonly requestId: string | null;
}

/**
 * Steps the queue's indexes and buffer took (tree nodes visited, heap moves
 * weighted by their depth, waiters read or copied): what a test counts to
 * show the queue's work per event does not grow with its length.
 */
export const queueWork = { steps: 0 };

/** log2 of a heap's size, the steps of one push or pop. */
export function depth(size: number): number {
  return 1 + Math.floor(Math.log2(size + 1));
}

/** The indexes of one buffer. */
export class WaiterIndex {
  private cap = 16;
  /** max(untilMs, joinedAtMs) by place, as a tree of maxima: node 1 the root, place i's leaf at cap + i. */
  private tree = new Float64Array(2 * this.cap).fill(-Infinity);
  /** Places whose end is after the sweep's instant, by end. */
  private readonly pending = new MinHeap<number>();
  /** Places whose end is at or before the sweep's instant, latest end first. */
  private readonly passed = new MinHeap<number>();
  /** 1 at a place whose end the sweep passed; a Fenwick tree of the same below. */
  private passedAt = new Uint8Array(this.cap);
  private fenwick = new Int32Array(this.cap + 1);
  /** Places by the requestId that joined them, in order: one place as a number (the usual case), more as an array. */
  private readonly byRequest = new Map<string, number | number[]>();
  private size = 0;

  constructor(private readonly items: readonly IndexedWaiter[]) {
    for (let i = 0; i < items.length; i++) this.added();
  }

  /** Takes in the waiter the buffer appended last. */
  added(): void {
    const i = this.size;
    const w = this.items[i]!;
    if (i >= this.cap) this.grow();
    this.size++;
    let node = this.cap + i;
    this.tree[node] = Math.max(w.untilMs, w.joinedAtMs);
    for (node >>= 1; node >= 1; node >>= 1) {
      this.tree[node] = Math.max(this.tree[2 * node]!, this.tree[2 * node + 1]!);
      queueWork.steps++;
    }
    this.pending.push(w.untilMs, i);
    queueWork.steps += depth(this.pending.size);
    if (w.requestId !== null) {
      const places = this.byRequest.get(w.requestId);
      if (places === undefined) this.byRequest.set(w.requestId, i);
      else if (typeof places === "number") this.byRequest.set(w.requestId, [places, i]);
      else places.push(i);
    }
  }

  /**
   * Takes in that the waiter at place `i` now ends earlier (its session's end
   * was recorded): its leaf of the tree, and a new entry in the sweep's heap
   * it is in (the one by its former end is stale, skipped when reached).
   */
  lowered(i: number): void {
    const w = this.items[i]!;
    let node = this.cap + i;
    this.tree[node] = Math.max(w.untilMs, w.joinedAtMs);
    for (node >>= 1; node >= 1; node >>= 1) {
      this.tree[node] = Math.max(this.tree[2 * node]!, this.tree[2 * node + 1]!);
      queueWork.steps++;
    }
    if (this.passedAt[i] === 1) this.passed.push(-w.untilMs, i);
    else this.pending.push(w.untilMs, i);
    queueWork.steps += depth(Math.max(this.passed.size, this.pending.size));
  }

  /**
   * The first place in [from, to) whose waiter's end or join is after `t`,
   * else `to`: the waiters before it would leave the head at once at `t`.
   */
  firstAfter(from: number, to: number, t: number): number {
    const found = this.descend(1, 0, this.cap, from, t);
    return found < 0 || found > to ? to : found;
  }

  private descend(node: number, lo: number, hi: number, from: number, t: number): number {
    queueWork.steps++;
    if (hi <= from || this.tree[node]! <= t) return -1;
    if (hi - lo === 1) return lo;
    const mid = (lo + hi) >>> 1;
    const left = this.descend(2 * node, lo, mid, from, t);
    return left >= 0 ? left : this.descend(2 * node + 1, mid, hi, from, t);
  }

  /** How many waiters of places [from, to) wait past `now` (their end after it). */
  waitingAt(from: number, to: number, now: number): number {
    this.sweepTo(now);
    return to - from - (this.passedBefore(to) - this.passedBefore(from));
  }

  /** Places in order that `requestId` joined. */
  joinedBy(requestId: string): readonly number[] {
    queueWork.steps++;
    const places = this.byRequest.get(requestId);
    return places === undefined ? [] : typeof places === "number" ? [places] : places;
  }

  /** Moves the sweep to `now`: places whose end is at or before it are marked passed, the others not. */
  private sweepTo(now: number): void {
    const { pending, passed, items } = this;
    // An entry whose place ends otherwise now, or is in the other heap, is stale (the place was lowered): dropped.
    while (passed.size > 0 && -passed.peekKey() > now) {
      const until = -passed.peekKey();
      const i = passed.pop()!;
      queueWork.steps += depth(passed.size);
      if (this.passedAt[i] !== 1 || items[i]!.untilMs !== until) continue;
      pending.push(until, i);
      queueWork.steps += depth(pending.size);
      this.mark(i, -1);
    }
    while (pending.size > 0 && pending.peekKey() <= now) {
      const until = pending.peekKey();
      const i = pending.pop()!;
      queueWork.steps += depth(pending.size);
      if (this.passedAt[i] !== 0 || items[i]!.untilMs !== until) continue;
      passed.push(-until, i);
      queueWork.steps += depth(passed.size);
      this.mark(i, 1);
    }
  }

  private mark(i: number, delta: 1 | -1): void {
    this.passedAt[i] = delta > 0 ? 1 : 0;
    for (let j = i + 1; j <= this.cap; j += j & -j) {
      this.fenwick[j]! += delta;
      queueWork.steps++;
    }
  }

  /** Places before `i` whose end the sweep passed. */
  private passedBefore(i: number): number {
    let sum = 0;
    for (let j = i; j > 0; j -= j & -j) {
      sum += this.fenwick[j]!;
      queueWork.steps++;
    }
    return sum;
  }

  /** Doubles the capacity: the trees are rebuilt from the leaves and marks (O(n), once per doubling). */
  private grow(): void {
    const cap = this.cap * 2;
    const tree = new Float64Array(2 * cap).fill(-Infinity);
    tree.set(this.tree.subarray(this.cap, this.cap + this.size), cap);
    for (let node = cap - 1; node >= 1; node--) tree[node] = Math.max(tree[2 * node]!, tree[2 * node + 1]!);
    const passedAt = new Uint8Array(cap);
    passedAt.set(this.passedAt);
    const fenwick = new Int32Array(cap + 1);
    for (let j = 1; j <= cap; j++) {
      fenwick[j]! += passedAt[j - 1]!;
      const parent = j + (j & -j);
      if (parent <= cap) fenwick[parent]! += fenwick[j]!;
    }
    queueWork.steps += 3 * cap;
    this.cap = cap;
    this.tree = tree;
    this.passedAt = passedAt;
    this.fenwick = fenwick;
  }
}
