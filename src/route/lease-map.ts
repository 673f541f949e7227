/**
 * A route's leases by key, as an immutable map whose updates share what they
 * do not change. States are never changed in place (a turn's base record and
 * the indexes' "before" must stay valid), and copying a whole `Map` per event
 * made each placement or touch cost in proportion to the route's live leases:
 * 86 µs with 1,000 and 5.5 ms with 10,000 (`bench/route-fold.ts`). Here the
 * keys are spread over {@link BUCKETS} small maps by a hash; an update copies
 * the one bucket it touches and the list of buckets, so it costs about
 * `BUCKETS + size / BUCKETS` entries instead of `size`.
 *
 * Iteration goes bucket by bucket, each in insertion order: deterministic,
 * but not the order of insertion; whoever shows leases sorts them.
 */

/** How many buckets the keys are spread over (a power of two). */
const BUCKETS = 64;

/** FNV-1a over the key's UTF-16 code units, folded to a bucket. */
function bucketOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) & (BUCKETS - 1);
}

/**
 * A copy of `map`. Through `forEach`, not `new Map(map)`: the constructor
 * walks the map's iterator, which makes an entry array per entry (6 of the
 * 10 KB a new placement allocated with 64 buckets copied per event).
 */
function copyOf<K, V>(map: ReadonlyMap<K, V> | undefined): Map<K, V> {
  const copy = new Map<K, V>();
  map?.forEach((value, key) => copy.set(key, value));
  return copy;
}

/** An immutable map from lease key to lease; `with` and `without` return updated copies. */
export class LeaseMap<V> implements Iterable<[string, V]> {
  private constructor(
    /** Non-empty buckets by index. Plain Maps, so that a snapshot (V8's structured serialization) keeps them. */
    private readonly buckets: ReadonlyMap<number, ReadonlyMap<string, V>>,
    readonly size: number,
  ) {}

  /** The map with no entries. */
  static empty<V>(): LeaseMap<V> {
    return new LeaseMap<V>(new Map(), 0);
  }

  /** A map holding `entries` (later entries win). */
  static from<V>(entries: Iterable<readonly [string, V]>): LeaseMap<V> {
    let map = LeaseMap.empty<V>();
    for (const [key, value] of entries) map = map.with(key, value);
    return map;
  }

  /**
   * The map a snapshot held: a structured-serialization copy of a LeaseMap
   * loses its class, and snapshots taken before it existed hold a plain Map.
   */
  static revive<V>(value: unknown): LeaseMap<V> {
    if (value instanceof LeaseMap) return value as LeaseMap<V>;
    if (value instanceof Map) return LeaseMap.from(value as Map<string, V>);
    const copy = value as { buckets?: unknown; size?: unknown } | null;
    if (copy !== null && typeof copy === "object" && copy.buckets instanceof Map && Number.isSafeInteger(copy.size)) {
      return new LeaseMap(copy.buckets as Map<number, Map<string, V>>, copy.size as number);
    }
    throw new TypeError("not a lease map");
  }

  get(key: string): V | undefined {
    return this.buckets.get(bucketOf(key))?.get(key);
  }

  has(key: string): boolean {
    return this.buckets.get(bucketOf(key))?.has(key) ?? false;
  }

  /** A copy with `key` set to `value`. */
  with(key: string, value: V): LeaseMap<V> {
    const b = bucketOf(key);
    const old = this.buckets.get(b);
    const bucket = copyOf(old);
    bucket.set(key, value);
    const buckets = copyOf(this.buckets);
    buckets.set(b, bucket);
    return new LeaseMap(buckets, old?.has(key) === true ? this.size : this.size + 1);
  }

  /** A copy without `keys`; this map itself when it holds none of them. */
  without(keys: Iterable<string>): LeaseMap<V> {
    let buckets: Map<number, ReadonlyMap<string, V>> | undefined;
    let size = this.size;
    for (const key of keys) {
      const b = bucketOf(key);
      const current = (buckets ?? this.buckets).get(b);
      if (current?.has(key) !== true) continue;
      buckets ??= copyOf(this.buckets);
      // A bucket is copied once per call, whatever number of its keys go.
      const bucket = current === this.buckets.get(b) ? copyOf(current) : (current as Map<string, V>);
      bucket.delete(key);
      if (bucket.size === 0) buckets.delete(b);
      else buckets.set(b, bucket);
      size--;
    }
    return buckets === undefined ? this : new LeaseMap(buckets, size);
  }

  *entries(): IterableIterator<[string, V]> {
    for (const bucket of this.buckets.values()) yield* bucket.entries();
  }

  *keys(): IterableIterator<string> {
    for (const bucket of this.buckets.values()) yield* bucket.keys();
  }

  *values(): IterableIterator<V> {
    for (const bucket of this.buckets.values()) yield* bucket.values();
  }

  [Symbol.iterator](): IterableIterator<[string, V]> {
    return this.entries();
  }
}
