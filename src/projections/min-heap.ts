/** A binary min-heap of items by a number fixed when each is pushed: log n per push and pop, the least at hand. */
export class MinHeap<T> {
  private readonly keys: number[] = [];
  private readonly items: T[] = [];

  /** Items in the heap. */
  get size(): number {
    return this.items.length;
  }

  /** The least key, Infinity when empty. */
  peekKey(): number {
    return this.keys[0] ?? Infinity;
  }

  /** The item of the least key. */
  peek(): T | undefined {
    return this.items[0];
  }

  push(key: number, item: T): void {
    const { keys, items } = this;
    let i = items.length;
    keys.push(key);
    items.push(item);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (keys[parent]! <= key) break;
      keys[i] = keys[parent]!;
      items[i] = items[parent]!;
      i = parent;
    }
    keys[i] = key;
    items[i] = item;
  }

  /** Removes and returns the item of the least key. */
  pop(): T | undefined {
    const { keys, items } = this;
    const top = items[0];
    if (top === undefined) return undefined;
    const lastKey = keys.pop()!;
    const lastItem = items.pop()!;
    const n = items.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= n) break;
        const child = left + 1 < n && keys[left + 1]! < keys[left]! ? left + 1 : left;
        if (keys[child]! >= lastKey) break;
        keys[i] = keys[child]!;
        items[i] = items[child]!;
        i = child;
      }
      keys[i] = lastKey;
      items[i] = lastItem;
    }
    return top;
  }
}
