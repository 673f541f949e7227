/**
 * Requests waiting for their turn, served one client at a time in rotation
 * (docs/operations.md, "Fair admission"). A client with a thousand requests
 * waiting and one with a single request each get the next free place in
 * turn, so the second waits for one request's worth of work, not for the
 * first's thousand.
 *
 * Which client a request is from, and whether its turn may be taken now
 * (its share of the requests served), is the caller's to say. Each client
 * may have at most `perClient` requests waiting and all together at most
 * `total`; past either bound a request is refused at once, which is cheaper
 * for everyone than holding it until its asker has given up.
 */

/** A first-in first-out queue with O(1) push and shift (an array with a moving head, compacted as it drains). */
class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  /** The oldest item, left in place. */
  peek(): T | undefined {
    return this.head === this.items.length ? undefined : this.items[this.head];
  }

  shift(): T | undefined {
    if (this.head === this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}

/** Why a request was not queued. */
export type QueueRefusal = "client-full" | "queue-full";

/** Per-client queues taken in rotation. */
export class FairQueue<T> {
  private readonly byClient = new Map<string, Fifo<T>>();
  /** Clients with something waiting, in the order their next request is served. */
  private readonly rotation = new Fifo<string>();
  private count = 0;

  constructor(
    /** Requests one client may have waiting. */
    readonly perClient: number,
    /** Requests all clients together may have waiting. */
    readonly total: number,
  ) {}

  /** Requests waiting. */
  get size(): number {
    return this.count;
  }

  /** Queues `item` behind `client`'s earlier ones, or says why not. */
  push(client: string, item: T): QueueRefusal | undefined {
    let queue = this.byClient.get(client);
    if (queue !== undefined && queue.length >= this.perClient) return "client-full";
    if (this.count >= this.total) return "queue-full";
    if (queue === undefined) {
      this.byClient.set(client, (queue = new Fifo()));
      this.rotation.push(client);
    }
    queue.push(item);
    this.count++;
    return undefined;
  }

  /**
   * The next request in rotation that `eligible` lets through: the oldest
   * of the first client in turn whose key it accepts. Clients passed over
   * keep their order; undefined when no client waiting is eligible.
   */
  next(eligible: (client: string) => boolean): T | undefined {
    for (let turns = this.rotation.length; turns > 0; turns--) {
      const client = this.rotation.shift()!;
      if (!eligible(client)) {
        this.rotation.push(client);
        continue;
      }
      const queue = this.byClient.get(client)!;
      const item = queue.shift()!;
      this.count--;
      if (queue.length > 0) this.rotation.push(client);
      else this.byClient.delete(client);
      return item;
    }
    return undefined;
  }

  /**
   * Takes out and returns the requests `stale` says have waited too long,
   * the oldest of each client first; since each client's queue is in
   * arrival order, only its oldest ones are looked at. Clients keep their
   * places in rotation.
   */
  expire(stale: (item: T) => boolean): T[] {
    const expired: T[] = [];
    for (const [client, queue] of this.byClient) {
      for (let head = queue.peek(); head !== undefined && stale(head); head = queue.peek()) expired.push(queue.shift()!);
      if (queue.length === 0) this.byClient.delete(client);
    }
    if (expired.length === 0) return expired;
    this.count -= expired.length;
    for (let turns = this.rotation.length; turns > 0; turns--) {
      const client = this.rotation.shift()!;
      if (this.byClient.has(client)) this.rotation.push(client);
    }
    return expired;
  }
}
