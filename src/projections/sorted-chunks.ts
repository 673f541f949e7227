/**
 * An ordered set kept as a list of short sorted arrays: insertion and removal
 * binary-search a chunk and move at most one chunk's elements, and the
 * smallest elements come first in iteration. The profile favoured it over a
 * balanced tree: no node per element, and the first few elements (all a
 * selection usually reads) are contiguous.
 */

/** Elements per chunk before it splits. */
const CHUNK = 128;

/** An ordered set of distinct elements (by `compare`; 0 means the same element). */
export class SortedChunks<T> {
  private chunks: T[][] = [];
  private count = 0;

  constructor(private readonly compare: (a: T, b: T) => number) {}

  /** How many elements the set holds. */
  get size(): number {
    return this.count;
  }

  /** Adds `item` (an element comparing equal to it is replaced). */
  add(item: T): void {
    if (this.chunks.length === 0) {
      this.chunks.push([item]);
      this.count = 1;
      return;
    }
    const c = this.chunkFor(item);
    const chunk = this.chunks[c]!;
    const i = this.position(chunk, item);
    if (i < chunk.length && this.compare(chunk[i]!, item) === 0) {
      chunk[i] = item;
      return;
    }
    chunk.splice(i, 0, item);
    this.count++;
    if (chunk.length > CHUNK) this.chunks.splice(c + 1, 0, chunk.splice(CHUNK >> 1));
  }

  /** Removes the element comparing equal to `item`; whether there was one. */
  delete(item: T): boolean {
    if (this.chunks.length === 0) return false;
    const c = this.chunkFor(item);
    const chunk = this.chunks[c]!;
    const i = this.position(chunk, item);
    if (i >= chunk.length || this.compare(chunk[i]!, item) !== 0) return false;
    chunk.splice(i, 1);
    this.count--;
    if (chunk.length === 0) this.chunks.splice(c, 1);
    return true;
  }

  /** Removes every element. */
  clear(): void {
    this.chunks = [];
    this.count = 0;
  }

  /** The elements, smallest first. */
  *[Symbol.iterator](): IterableIterator<T> {
    for (const chunk of this.chunks) yield* chunk;
  }

  /**
   * Calls `visit` on the elements, smallest first, until it returns true.
   * For a hot path that reads the first few: no generator object per call.
   */
  visitUntil(visit: (item: T) => boolean): void {
    for (const chunk of this.chunks) for (const item of chunk) if (visit(item)) return;
  }

  /** The chunk an element belongs in: the first whose last element is not smaller (else the last chunk). */
  private chunkFor(item: T): number {
    let lo = 0;
    let hi = this.chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const chunk = this.chunks[mid]!;
      if (this.compare(chunk[chunk.length - 1]!, item) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The first index of `chunk` whose element is not smaller than `item`. */
  private position(chunk: readonly T[], item: T): number {
    let lo = 0;
    let hi = chunk.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.compare(chunk[mid]!, item) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
