/**
 * A read model kept current by following part of the event stream: every
 * event of one kind is folded into a per-id state with that kind's own
 * `evolve`, so read endpoints (lists, counts, loads, indexes) see the same
 * states the actors do, whichever instance wrote them.
 *
 * Reads that must reflect every acknowledged write (read-your-writes across
 * instances) call {@link KindFollower.fresh} first: it learns the stream's
 * last sequence and waits until the fold has reached it.
 */
import type { EventLog, Following, HistoryEntry, StoredMessage } from "../events/index.ts";
import { decodeEvent, decodeToken } from "../events/index.ts";

/** What the follower needs of a kind: its initial state and its fold. */
export interface Fold<State> {
  initialState(id: string): State;
  evolve(state: State, entry: HistoryEntry): State;
}

/** Called after each entry is folded (indexes hook in here). */
export type FoldListener<State> = (id: string, state: State, entry: HistoryEntry) => void;

/** Follows `<prefix>.events.<kind>.*` and folds it into a map of states by id. */
export class KindFollower<State> {
  private readonly states = new Map<string, State>();
  private appliedSeq = 0;
  private waiters: { seq: number; resolve: () => void }[] = [];
  private following: Following | undefined;
  private readonly listeners: FoldListener<State>[] = [];

  constructor(
    private readonly log: EventLog,
    private readonly filter: string,
    private readonly fold: Fold<State>,
  ) {}

  /** Starts following from the beginning of the stream. */
  async start(): Promise<void> {
    this.following = await this.log.follow(1, (m) => this.onMessage(m), this.filter);
  }

  /** Stops following. */
  async stop(): Promise<void> {
    await this.following?.stop();
  }

  /** Registers a listener called after every folded entry. */
  onFold(listener: FoldListener<State>): void {
    this.listeners.push(listener);
  }

  /** The folded state of one id (initial state when it has no events). */
  get(id: string): State {
    return this.states.get(id) ?? this.fold.initialState(id);
  }

  /**
   * Replaces every folded state with `fn(id, state)`: housekeeping (dropping
   * what is past retention) that must leave every answer unchanged.
   */
  compact(fn: (id: string, state: State) => State): void {
    for (const [id, state] of this.states) this.states.set(id, fn(id, state));
  }

  /** Every id with at least one event, and its state. */
  entries(): IterableIterator<[string, State]> {
    return this.states.entries();
  }

  /** The last stream sequence folded (of any subject). */
  get seq(): number {
    return this.appliedSeq;
  }

  /**
   * Waits until every event of this kind the stream held when called has
   * been folded. Concurrent callers share looks at the stream (see
   * {@link batchedCatchUp}): under load one query serves a batch of requests.
   */
  readonly fresh: () => Promise<void> = batchedCatchUp(async () => {
    // The leader's last sequence on our filter (wildcards allowed), so this
    // sees writes acknowledged to any instance.
    await this.reached(await this.log.lastSubjectSeq(this.filter));
  });

  /** Waits until the fold has applied stream sequence `seq` (of this kind). */
  reached(seq: number): Promise<void> {
    if (this.appliedSeq >= seq) return Promise.resolve();
    return new Promise<void>((resolve) => this.waiters.push({ seq, resolve }));
  }

  private onMessage(message: StoredMessage): void {
    const token = message.subject.slice(message.subject.lastIndexOf(".") + 1);
    let id: string;
    try {
      id = decodeToken(token);
    } catch {
      // Not a subject leasehold writes; nothing to fold, but the position moves on.
      this.appliedSeq = message.seq;
      return;
    }
    const entry = decodeEvent(message.payload, message.seq, message.msgId);
    const state = this.fold.evolve(this.get(id), entry);
    this.states.set(id, state);
    this.appliedSeq = message.seq;
    for (const listener of this.listeners) listener(id, state, entry);
    if (this.waiters.length > 0) {
      const due = this.waiters.filter((w) => w.seq <= this.appliedSeq);
      this.waiters = this.waiters.filter((w) => w.seq > this.appliedSeq);
      for (const w of due) w.resolve();
    }
  }
}

/**
 * A read model built on one kind's {@link KindFollower}: the follower's
 * lifecycle and freshness, so each read model only adds its own indexes.
 */
export abstract class FollowedReadModel<State> {
  protected readonly follower: KindFollower<State>;

  constructor(log: EventLog, filter: string, fold: Fold<State>) {
    this.follower = new KindFollower(log, filter, fold);
  }

  /** Starts following the stream. */
  start(): Promise<void> {
    return this.follower.start();
  }

  /** Stops following the stream. */
  stop(): Promise<void> {
    return this.follower.stop();
  }

  /** Waits until every event of the kind the stream held when called is folded (read-your-writes across instances; concurrent callers share looks). */
  fresh(): Promise<void> {
    return this.follower.fresh();
  }
}

/*
 * Shares catch-up queries between concurrent readers without weakening
 * read-your-writes: a reader is only ever answered by a query issued after it
 * arrived. While a query is in flight, every reader that arrives waits for
 * the next one, which starts when the current one ends; so under load one
 * query per table serves a whole batch of requests instead of one each.
 */
/** Wraps `query` (e.g. a follower's `fresh`) so that concurrent callers share runs as described above. */
export function batchedCatchUp(query: () => Promise<void>): () => Promise<void> {
  let current: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const start = (): Promise<void> => {
    const run = query().finally(() => {
      if (current === run) current = undefined;
    });
    current = run;
    return run;
  };
  return () => {
    if (current === undefined) return start();
    if (next === undefined) {
      // Issued only once the current query has ended, hence after every caller waiting on it arrived.
      next = current
        .catch(() => undefined)
        .then(() => {
          next = undefined;
          return start();
        });
    }
    return next;
  };
}
