/**
 * `client.lock.watch(name)`: the lock's states as an async iterator, fed by
 * the event stream (an ordered consumer on the lock's own subject), starting
 * with its current state. Every wait is bounded: opening the watch takes at
 * most the client's request timeout per step, and a consumer that breaks is
 * re-created by the ordered consumer itself (from the next sequence).
 *
 * The first state comes from the subject's last event (one direct read). An
 * event that does not say who holds the lock (a type this client does not
 * fold) is completed by one `lock.get`. After that every lock event yields
 * the state it leaves, and a lease whose `expiresAt` passes (by this
 * machine's wall clock) yields a free state with cause `expired`: the service
 * writes nothing when a lease runs out.
 */
import { DeliverPolicy, jetstream, jetstreamManager, type ConsumerMessages, type StoredMsg } from "@nats-io/jetstream";
import { readLockEvent, type LockEventWire } from "../contract/lock-event-wire.ts";
import type { Transport } from "./transport.ts";
import type { LockGetReply, LockNameRequest } from "../contract/messages.ts";

/** A lease as the stream shows it (no etag: only its holder needs one, and gets it from acquire and renew). */
export interface WatchedLease {
  readonly owner: string;
  /** The fencing token of this holding. */
  readonly generation: number;
  readonly ttlMs: number;
  /** Server instant (RFC 3339, ms) at which the lease expires unless renewed. */
  readonly expiresAt: string;
}

/** One state of a watched lock. */
export interface LockWatchState {
  readonly name: string;
  /** The lease, or null when the lock is free (released, reset, expired, or never held). */
  readonly lease: WatchedLease | null;
  /** The highest generation granted so far (0: never acquired); the next acquisition gets more. */
  readonly generation: number;
  /** Stream sequence of the last event folded (0: the lock has no history). */
  readonly seq: number;
  /** What made this state: the event type, `"initial"` (no history), or `"expired"` (the lease ran out, no event). */
  readonly cause: string;
}

/** Options of `client.lock.watch`. */
export interface LockWatchOptions {
  /** Ends the watch when aborted (as `return()` does). */
  readonly signal?: AbortSignal;
  /** Wall clock for lease expiry, epoch ms (default `Date.now`; tests inject one). */
  readonly now?: () => number;
  /**
   * Keep only the latest state for a reader that falls behind, instead of
   * every one (default false: every state is queued until read).
   */
  readonly latestOnly?: boolean;
}

/** What the watch needs of the lock endpoints. */
export interface WatchLockApi {
  get(request: LockNameRequest): Promise<LockGetReply>;
}

/**
 * The watch of one lock; iterate it with `for await`, end it with `return()`
 * (or `break`) or the signal. It opens at once, in the background: the first
 * `next()` waits for the current state (bounded by the client's timeout per
 * step) and rejects if the stream could not be read.
 */
export class LockWatch implements AsyncIterableIterator<LockWatchState>, AsyncDisposable {
  private readonly queue: LockWatchState[] = [];
  private waiting: ((r: IteratorResult<LockWatchState>) => void) | undefined;
  private failWaiting: ((e: Error) => void) | undefined;
  private failure: Error | undefined;
  private done = false;
  private messages: ConsumerMessages | undefined;
  private expiryTimer: ReturnType<typeof setTimeout> | undefined;
  private state: LockWatchState;
  private readonly now: () => number;
  private readonly onAbort = () => void this.return();
  /** Settles once the current state is queued (or the watch failed to open). */
  readonly opened: Promise<void>;

  constructor(
    t: Transport,
    api: WatchLockApi,
    readonly name: string,
    private readonly options: LockWatchOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.state = { name, lease: null, generation: 0, seq: 0, cause: "initial" };
    options.signal?.addEventListener("abort", this.onAbort, { once: true });
    if (options.signal?.aborted === true) this.done = true;
    this.opened = this.open(t, api).catch((e: unknown) => this.fail(e));
  }

  /** Reads the current state, then follows the lock's subject from the next event on. */
  private async open(t: Transport, api: WatchLockApi): Promise<void> {
    if (this.done) return;
    const name = this.name;
    const subject = t.subjects.event("lock", name);
    const stream = t.subjects.eventStream;
    const jsm = await jetstreamManager(t.nc, { timeout: t.timeoutMs });
    const last: StoredMsg | null = await jsm.streams.getMessage(stream, { last_by_subj: subject });
    let initial = this.state;
    if (last !== null) {
      const event = readLockEvent(last.data);
      const folded = event === undefined ? undefined : fold(initial, event, last.seq);
      initial = folded ?? (await fromGet(api, name, last.seq));
    }
    // A lease already past its expiry is free now: the current state says so.
    if (initial.lease !== null && Date.parse(initial.lease.expiresAt) <= this.now())
      initial = { ...initial, lease: null, cause: "expired" };
    if (this.done) return;
    const consumer = await jetstream(t.nc, { timeout: t.timeoutMs }).consumers.get(stream, {
      filter_subjects: [subject],
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: initial.seq + 1,
    });
    const messages = await consumer.consume();
    this.advance(initial);
    this.follow(messages);
  }

  /** The latest state (the one most recently queued). */
  get current(): LockWatchState {
    return this.state;
  }

  next(): Promise<IteratorResult<LockWatchState>> {
    const queued = this.queue.shift();
    if (queued !== undefined) return Promise.resolve({ value: queued, done: false });
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiting = resolve;
      this.failWaiting = reject;
    });
  }

  /** Ends the watch: stops the consumer, and any pending `next()` resolves done. */
  return(): Promise<IteratorResult<LockWatchState>> {
    this.finish();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.return();
  }

  private follow(messages: ConsumerMessages): void {
    this.messages = messages;
    if (this.done) {
      void messages.close().catch(() => undefined);
      return;
    }
    void (async () => {
      try {
        for await (const m of messages) {
          if (this.done) break;
          const event = readLockEvent(m.data);
          if (event === undefined) continue;
          const next = fold(this.state, event, m.seq);
          if (next !== undefined) this.advance(next);
        }
      } catch (e) {
        this.fail(e);
      }
    })();
  }

  private advance(next: LockWatchState): void {
    this.state = next;
    this.push(next);
    this.armExpiry();
  }

  /** A free state at the lease's expiry, unless an event replaced the lease first. */
  private armExpiry(): void {
    clearTimeout(this.expiryTimer);
    const lease = this.state.lease;
    if (lease === null || this.done) return;
    const at = this.state;
    const fire = () => {
      if (this.state !== at || this.done) return;
      this.advance({ ...at, lease: null, cause: "expired" });
    };
    const left = Date.parse(lease.expiresAt) - this.now();
    if (left <= 0) fire();
    else this.expiryTimer = setTimeout(fire, left);
  }

  private push(state: LockWatchState): void {
    if (this.done) return;
    const waiting = this.waiting;
    if (waiting !== undefined) {
      this.waiting = undefined;
      this.failWaiting = undefined;
      waiting({ value: state, done: false });
    } else {
      if (this.options.latestOnly === true) this.queue.length = 0;
      this.queue.push(state);
    }
  }

  private fail(e: unknown): void {
    // After return() (also while opening) there is nobody to tell.
    if (this.done) return;
    this.failure = e instanceof Error ? e : new Error(String(e));
    const reject = this.failWaiting;
    this.finish();
    reject?.(this.failure);
  }

  private finish(): void {
    if (this.done) return;
    this.done = true;
    clearTimeout(this.expiryTimer);
    this.options.signal?.removeEventListener("abort", this.onAbort);
    void this.messages?.close().catch(() => undefined);
    const waiting = this.waiting;
    this.waiting = undefined;
    this.failWaiting = undefined;
    waiting?.({ value: undefined, done: true });
  }
}

/** The state after one lock event, or undefined for an event that does not say who holds the lock. */
function fold(state: LockWatchState, event: LockEventWire, seq: number): LockWatchState | undefined {
  const base = { name: state.name, seq, cause: event.type };
  switch (event.type) {
    case "LockAcquired":
    case "LockRenewed": {
      const { owner, generation, ttlMs, expiresAt } = event.data;
      return { ...base, lease: { owner, generation, ttlMs, expiresAt }, generation: Math.max(state.generation, generation) };
    }
    case "LockReleased":
      return { ...base, lease: null, generation: Math.max(state.generation, event.data.generation) };
    case "LockReset":
      return { ...base, lease: null, generation: Math.max(state.generation, event.data.generation) };
    default:
      // A lock event that does not change who holds it (e.g. a waiter queueing).
      return undefined;
  }
}

/** The state as `lock.get` tells it, standing for the stream up to `seq`. */
async function fromGet(api: WatchLockApi, name: string, seq: number): Promise<LockWatchState> {
  const { lease } = await api.get({ name });
  const watched =
    lease === null ? null : { owner: lease.owner, generation: lease.generation, ttlMs: lease.ttlMs, expiresAt: lease.expiresAt };
  return { name, lease: watched, generation: lease?.generation ?? 0, seq, cause: "initial" };
}
