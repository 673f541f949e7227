/**
 * A kind's projection: every event of one kind (`<prefix>.events.<kind>.*`)
 * folded into a state per id, with the last subject sequence and event
 * instant of each id. One per kind and service instance, fed by one stream
 * follower. It is where actors take their state from (no read on the request
 * path), where the read endpoints and indexes look, and what snapshots save.
 *
 * Two writers feed it: the follower, in stream order, and the actors of this
 * instance, which apply their own appended event at once (an append that
 * passed the expected-sequence check cannot have skipped anything on its
 * subject). A per-id sequence guard makes each event count once.
 *
 * Every wait it offers is bounded: {@link KindProjection.reached} and
 * {@link KindProjection.fresh} reject with a LogUnavailableError at their
 * deadline, and a follower that stops moving while someone waits on it is
 * re-created from the sequence after the last one it delivered.
 */
import type { Logger } from "pino";
import {
  baseMsgId,
  decodeEvent,
  isUnparsable,
  LogUnavailableError,
  pause,
  withDeadline,
  type EventLog,
  type Following,
  type HistoryEntry,
  type RecordedEvent,
  type StoredMessage,
  instantMs,
} from "../events/index.ts";
import { type ActorKind } from "../contract/subjects.ts";
import { decodeToken } from "../contract/subject-token.ts";
import { batchedCatchUp } from "./batched-catch-up.ts";
import { ChangeTrackedMap, IncrementalSnapshots, type SnapshotCompaction } from "./incremental-snapshots.ts";
import type { ProjectionSnapshotStore } from "./snapshot-stores.ts";
import { ReplyMemory, type RememberedReply, type ReplyMemoryLimits } from "./reply-memory.ts";

/** The pure parts of a kind that a projection needs. */
export interface KindFold<State> {
  readonly kind: ActorKind;
  /** Bumped whenever `evolve` changes what a history means: snapshots of another version are ignored. */
  readonly foldVersion: number;
  /** The state of an id with no history. */
  initialState(id: string): State;
  /** Applies one history entry (including messages that did not parse). */
  evolve(state: State, entry: HistoryEntry): State;
  /** The reply owed to the command that recorded `recorded`, given the state right after it. */
  replyFor(state: State, recorded: RecordedEvent): unknown;
  /** A state as a snapshot keeps it (default: as it is); V8's serialization keeps plain data, Maps and Sets. */
  serializeState?(state: State): unknown;
  /** A state as a snapshot gives it back, made whole again (default: as it is); V8's serialization keeps no classes. */
  reviveState?(state: State): State;
}

/** One id's folded state and where in the stream it stands. */
export interface ProjectionRecord<State> {
  readonly state: State;
  /** The stream sequence of the id's last event (0: none); an append expects it. */
  readonly seq: number;
  /** The latest event instant of the id (epoch ms), so `at` never goes back along its subject. */
  readonly atMs: number;
}

/** Called after each entry is folded, by the follower or by an actor's own append (indexes hook in here). */
export type FoldListener<State> = (id: string, state: State, entry: HistoryEntry) => void;

/** Data a read model keeps beside the states that cannot be derived from them, saved in the projection's snapshots. */
export interface SnapshotExtra {
  save(): unknown;
  restore(data: unknown): void;
}

/** Settings of a {@link KindProjection}. */
export interface KindProjectionOptions<State> {
  readonly log: EventLog;
  /** The kind's subject filter (`<prefix>.events.<kind>.*`). */
  readonly filter: string;
  readonly fold: KindFold<State>;
  readonly logger: Logger;
  /** Where snapshots are kept; without one the stream is folded from the start on every start. */
  readonly snapshots?: ProjectionSnapshotStore | undefined;
  /** Save a snapshot after this many events folded since the last one (default 10,000)... */
  readonly snapshotEvery?: number;
  /** ...or this long after the last one when anything changed (default 60 s). */
  readonly snapshotIntervalMs?: number;
  /** When a save writes every record again rather than those changed since the last one. */
  readonly snapshotCompaction?: SnapshotCompaction;
  /** Deadline of each look at the stream, and how long the follower may stall while awaited (default 5000 ms). */
  readonly opTimeoutMs?: number;
  /** Default deadline of {@link KindProjection.fresh} (the request timeout; default: `opTimeoutMs`). */
  readonly readTimeoutMs?: number;
  /** A follower awaited by someone that delivers nothing for this long is re-created (default 1000 ms). */
  readonly stallMs?: number;
  /** How long a start may take to catch up with the stream before it fails (default 300 s). */
  readonly startTimeoutMs?: number;
  readonly replies?: ReplyMemoryLimits;
  /** The clock replies are judged past their horizon by (default: the system's). */
  readonly now?: () => number;
}

interface Waiter {
  readonly seq: number;
  readonly resolve: () => void;
}

/**
 * How long the follower's consumer is given to say whether it is caught up
 * (it answers in about a millisecond). Every fresh look of the kind waits on
 * this one, so a request lost while NATS reconnects must not hold them all
 * for the whole operation timeout: past this, the leader is asked instead,
 * with the time the request has left.
 */
const CONSUMER_LOOK_MS = 500;

/** One kind's folded states, kept current by a follower. */
export class KindProjection<State> {
  readonly kind: ActorKind;
  private readonly records = new ChangeTrackedMap<string, ProjectionRecord<State>>();
  private readonly listeners: FoldListener<State>[] = [];
  private readonly restoreListeners: (() => void)[] = [];
  private readonly extras = new Map<string, SnapshotExtra>();
  private readonly replyMemory: ReplyMemory;
  private readonly snapshots: IncrementalSnapshots<State> | undefined;
  /** Message ids whose own turn waits to learn where (and whether) they were stored. */
  private readonly watched = new Map<string, { reply: unknown; seq: number } | null>();
  private waiters: Waiter[] = [];
  private appliedSeq = 0;
  private pending = 0;
  private following: Following | undefined;
  private started: Promise<void> | undefined;
  private stopped = false;
  private watchdog: NodeJS.Timeout | undefined;
  private lastProgressSeq = 0;
  private sinceSnapshot = 0;
  private lastSnapshotAt = 0;
  private saving: Promise<void> | undefined;
  /** Set once the start has caught up: snapshots are not taken while folding the backlog (each would encode every record). */
  private caughtUp = false;
  private readonly opTimeoutMs: number;
  private readonly now: () => number;
  /** How often the follower was re-created (diagnostics, tests). */
  restarts = 0;
  /** The stream sequence the latest snapshot loaded at start covered (0: folded from the start). */
  startedFromSeq = 0;

  constructor(private readonly options: KindProjectionOptions<State>) {
    this.kind = options.fold.kind;
    this.opTimeoutMs = options.opTimeoutMs ?? 5000;
    this.now = options.now ?? Date.now;
    this.replyMemory = new ReplyMemory(options.replies);
    this.snapshots =
      options.snapshots &&
      new IncrementalSnapshots({
        ...{ store: options.snapshots, fold: options.fold, logger: options.logger, compaction: options.snapshotCompaction },
        ...{ records: this.records, replies: this.replyMemory, extras: this.extras },
      });
  }

  /** The fold this projection applies. */
  get fold(): KindFold<State> {
    return this.options.fold;
  }

  /**
   * Loads the latest usable snapshot, follows the stream from the sequence
   * after it, and resolves once every event of the kind the stream held when
   * called is folded. Idempotent: owners sharing the projection may all call it.
   */
  start(): Promise<void> {
    this.started ??= this.begin();
    return this.started;
  }

  /** Stops following and saves a last snapshot; bounded whatever the server does. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.watchdog);
    await this.following?.stop();
    if (this.started !== undefined && this.sinceSnapshot > 0) await this.saveSnapshot();
    else await this.saving;
    for (const w of this.waiters.splice(0)) w.resolve();
  }

  /** Registers a listener called after every folded entry. */
  onFold(listener: FoldListener<State>): void {
    this.listeners.push(listener);
  }

  /** Registers a listener called once states were loaded from a snapshot (indexes rebuild themselves from {@link entries}). */
  onRestore(listener: () => void): void {
    this.restoreListeners.push(listener);
  }

  /** Saves `extra`'s data in every snapshot under `name`, and hands it back on restore. */
  attachExtra(name: string, extra: SnapshotExtra): void {
    this.extras.set(name, extra);
  }

  /** One id's record (the initial state at sequence 0 when it has no events). */
  record(id: string): ProjectionRecord<State> {
    return this.records.get(id) ?? { state: this.options.fold.initialState(id), seq: 0, atMs: 0 };
  }

  /** One id's folded state. */
  get(id: string): State {
    return this.records.get(id)?.state ?? this.options.fold.initialState(id);
  }

  /** Every id with at least one event, and its state. */
  *entries(): IterableIterator<[string, State]> {
    for (const [id, record] of this.records) yield [id, record.state];
  }

  /** How many ids have a record. */
  get size(): number {
    return this.records.size;
  }

  /** The last stream sequence the follower folded (of this kind). */
  get seq(): number {
    return this.appliedSeq;
  }

  /** Events of the kind the stream holds that the follower has not delivered yet, as of its last delivery. */
  get lag(): number {
    return this.pending;
  }

  /**
   * Replaces every folded state with `fn(id, state)`: housekeeping (dropping
   * what is past retention) that must leave every answer unchanged.
   */
  compact(fn: (id: string, state: State) => State): number {
    let changed = 0;
    for (const [id, record] of this.records) {
      const state = fn(id, record.state);
      if (state !== record.state) {
        this.records.set(id, { ...record, state });
        changed++;
      }
    }
    return changed;
  }

  /** Forgets replies older than the reply horizon at `now`. */
  pruneReplies(now: number): void {
    this.replyMemory.prune(now);
  }

  /** The reply remembered for the event appended with `msgId`, if any. */
  remembered(msgId: string): RememberedReply | undefined {
    return this.replyMemory.get(msgId);
  }

  /** How many replies are remembered, and about how many bytes they take. */
  get replies(): { entries: number; bytes: number } {
    return this.replyMemory.size;
  }

  /** Starts noting where the event appended with `msgId` lands, whoever folds it first. */
  watch(msgId: string): void {
    if (!this.watched.has(msgId)) this.watched.set(msgId, null);
  }

  /** Where the watched `msgId` landed and the reply it owes, once folded. */
  replyRecordedFor(msgId: string): { reply: unknown; seq: number } | undefined {
    return this.watched.get(msgId) ?? undefined;
  }

  /** Stops watching `msgId`. */
  unwatch(msgId: string): void {
    this.watched.delete(msgId);
  }

  /**
   * Applies an event this instance appended, right after its acknowledgement.
   * `stateAfter` is the state the actor computed from the record it decided
   * on; ignored when the follower got there first.
   */
  applyOwn(id: string, recorded: RecordedEvent, stateAfter: State, atMs: number, reply: unknown): void {
    const before = this.records.get(id);
    if (before !== undefined && before.seq >= recorded.seq) return;
    this.records.set(id, { state: stateAfter, seq: recorded.seq, atMs: Math.max(atMs, before?.atMs ?? 0) });
    this.noteReply(recorded, reply, atMs);
    for (const listener of this.listeners) listener(id, stateAfter, recorded);
  }

  /** Resolves once the follower has folded stream sequence `seq`; rejects at `timeoutMs`. */
  reached(seq: number, timeoutMs = this.opTimeoutMs): Promise<void> {
    if (this.appliedSeq >= seq) return Promise.resolve();
    if (this.stopped) return Promise.reject(new LogUnavailableError(`the ${this.kind} projection is stopped`, false));
    const waiting = new Promise<void>((resolve) => this.waiters.push({ seq, resolve }));
    return withDeadline(waiting, timeoutMs, `the ${this.kind} projection to reach sequence ${seq}`);
  }

  /**
   * Resolves once every event of the kind the stream held when called is
   * folded (read-your-writes across instances); rejects at `timeoutMs`.
   * Concurrent callers share looks at the stream.
   */
  fresh(timeoutMs = this.options.readTimeoutMs ?? this.opTimeoutMs): Promise<void> {
    return withDeadline(this.sharedFresh(), timeoutMs, `the ${this.kind} projection to catch up`);
  }

  private readonly sharedFresh = batchedCatchUp(async () => {
    // On a replicated stream the consumer's server may be a replica a moment
    // behind the leader (docs/cluster.md): the read models take that window
    // for a look whose cost does not grow with the stream; verified answers
    // (`freshSubject`) do not.
    if (await this.consumerCaughtUp()) return;
    // Otherwise (messages pending or in flight, or the consumer being re-created) the leader's last sequence on the filter.
    const last = await this.options.log.lastSubjectSeq(this.options.filter, this.opTimeoutMs);
    await this.reached(last, this.opTimeoutMs);
  });

  /**
   * Asks the follower's own consumer whether the server has nothing pending
   * for it and we got everything it delivered: then every event of the kind
   * stored before this look is folded. One look serves every concurrent
   * caller, whichever subject they care about, and its answer is a few
   * hundred bytes, where the leader's "last message on a subject" carries
   * that message (a route's first placement names every candidate: 7 KB
   * with 1,000 hosts). False when the consumer cannot tell (see `caughtUp`),
   * or does not answer within {@link CONSUMER_LOOK_MS}.
   */
  private readonly consumerCaughtUp = batchedCatchUp<boolean>(
    () => this.following?.caughtUp(Math.min(this.opTimeoutMs, CONSUMER_LOOK_MS)).catch(() => false) ?? Promise.resolve(false),
  );

  /**
   * Resolves once the projection holds the last event of one subject (an
   * actor's), whoever wrote it; rejects at `timeoutMs`. Concurrent callers
   * share the consumer's look, and those of one subject the leader's.
   */
  freshSubject(subject: string, timeoutMs = this.options.readTimeoutMs ?? this.opTimeoutMs): Promise<void> {
    let shared = this.subjectLooks.get(subject);
    if (shared === undefined) {
      const look = batchedCatchUp(async () => {
        if (this.following?.vouchesForLeader === true && (await this.consumerCaughtUp())) return;
        await this.reached(await this.options.log.lastSubjectSeq(subject, this.opTimeoutMs), this.opTimeoutMs);
      });
      shared = () => {
        const run = look();
        const forget = () => {
          if (this.subjectLooks.get(subject) === shared) this.subjectLooks.delete(subject);
        };
        run.then(forget, forget);
        return run;
      };
      this.subjectLooks.set(subject, shared);
    }
    return withDeadline(shared(), timeoutMs, `the ${this.kind} projection to catch up with ${subject}`);
  }

  private readonly subjectLooks = new Map<string, () => Promise<void>>();

  private async begin(): Promise<void> {
    const startTimeoutMs = this.options.startTimeoutMs ?? 300_000;
    const startDeadline = performance.now() + startTimeoutMs;
    // A stream just created on a cluster, or a leader being elected, may not answer at once: retry each look until the start's deadline.
    const patiently = <T>(what: string, look: () => Promise<T>) =>
      retryUntil(startDeadline, look, (err) => this.options.logger.warn({ err, kind: this.kind }, `${what} failed; retrying`));
    const from = await this.restore(patiently);
    this.startedFromSeq = from;
    this.following = await patiently("following the stream", () =>
      this.options.log.follow(from + 1, (m) => this.onMessage(m), {
        filter: this.options.filter,
        onRestart: (err, nextSeq) => {
          this.restarts++;
          this.options.logger.warn({ err, kind: this.kind, nextSeq }, "projection follower re-created");
        },
      }),
    );
    this.watchdog = setInterval(() => this.checkProgress(), this.options.stallMs ?? 1000);
    this.watchdog.unref();
    const last = await patiently("reading the stream's last sequence", () =>
      this.options.log.lastSubjectSeq(this.options.filter, this.opTimeoutMs),
    );
    await this.reached(last, Math.max(1, startDeadline - performance.now()));
    this.caughtUp = true;
    this.lastSnapshotAt = Date.now();
    // One snapshot for a long backlog folded at start, so the next start does not fold it again.
    if (this.sinceSnapshot >= (this.options.snapshotEvery ?? 10_000)) void this.saveSnapshot();
    this.options.logger.debug({ kind: this.kind, fromSeq: from, seq: this.appliedSeq, ids: this.records.size }, "projection caught up");
  }

  /** Loads the latest usable snapshot; returns the sequence it covers (0 without one). */
  private async restore(patiently: <T>(what: string, look: () => Promise<T>) => Promise<T>): Promise<number> {
    const seq = await (this.snapshots?.restore(() => patiently("reading the stream's last sequence", () => this.options.log.lastSeq())) ??
      0);
    if (seq === 0) return 0;
    for (const listener of this.restoreListeners) listener();
    this.appliedSeq = seq;
    this.lastProgressSeq = seq;
    return seq;
  }

  private onMessage(message: StoredMessage): void {
    if (message.seq <= this.appliedSeq) return;
    this.pending = message.pending ?? 0;
    const token = message.subject.slice(message.subject.lastIndexOf(".") + 1);
    let id: string | undefined;
    try {
      id = decodeToken(token);
    } catch {
      // Not a subject leasehold writes; nothing to fold, but the position moves on.
    }
    if (id !== undefined) this.foldMessage(id, message);
    this.appliedSeq = message.seq;
    this.sinceSnapshot++;
    if (this.waiters.length > 0) this.wake();
    if (this.sinceSnapshot >= (this.options.snapshotEvery ?? 10_000) || this.snapshotDue()) void this.saveSnapshot();
  }

  private foldMessage(id: string, message: StoredMessage): void {
    const before = this.records.get(id);
    if (before !== undefined && before.seq >= message.seq) return; // this instance applied it already
    // Without its message id (read from the headers only when a reply is owed: see owesReply).
    const entry = decodeEvent(message.payload, message.seq);
    const { fold } = this.options;
    const state = fold.evolve(before?.state ?? fold.initialState(id), entry);
    const atMs = isUnparsable(entry) ? 0 : instantMs(entry.event.at);
    this.records.set(id, { state, seq: message.seq, atMs: Math.max(atMs, before?.atMs ?? 0) });
    if (!isUnparsable(entry) && this.owesReply(entry, atMs, message)) {
      const recorded = { ...entry, msgId: message.msgId };
      this.noteReply(recorded, fold.replyFor(state, recorded), atMs);
    }
    for (const listener of this.listeners) listener(id, state, entry);
  }

  /**
   * Whether the folded `entry` owes a reply worth keeping: one an own turn
   * watches for, or one its request asked for (`requestId`) that is not past
   * the reply horizon already (a start's backlog holds mostly such replies).
   */
  private owesReply(entry: RecordedEvent, atMs: number, message: StoredMessage): boolean {
    if (this.watched.size > 0 && message.msgId !== undefined && this.watched.has(baseMsgId(message.msgId))) return true;
    return entry.event.requestId !== undefined && !this.replyMemory.outlived(atMs, this.now(), message.pending ?? 0);
  }

  private noteReply(recorded: RecordedEvent, reply: unknown, atMs: number): void {
    if (recorded.msgId === undefined) return;
    // A retry under a variant id answers for the request's own id.
    const msgId = baseMsgId(recorded.msgId);
    if (recorded.event.requestId !== undefined) this.replyMemory.remember(msgId, reply, atMs);
    if (this.watched.has(msgId)) this.watched.set(msgId, { reply, seq: recorded.seq });
  }

  private wake(): void {
    const due = this.waiters.filter((w) => w.seq <= this.appliedSeq);
    if (due.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.seq > this.appliedSeq);
    for (const w of due) w.resolve();
  }

  /** Re-creates the follower when someone waits on it and it did not move for a whole period (e.g. after a server restart). */
  private checkProgress(): void {
    const stalled = this.waiters.length > 0 && this.appliedSeq === this.lastProgressSeq;
    this.lastProgressSeq = this.appliedSeq;
    if (stalled) {
      this.options.logger.warn(
        { kind: this.kind, seq: this.appliedSeq, waiting: this.waiters.length },
        "projection follower stalled; re-creating it",
      );
      this.restarts++;
      this.following?.restart();
    }
    if (this.snapshotDue()) void this.saveSnapshot();
  }

  private snapshotDue(): boolean {
    return this.sinceSnapshot > 0 && Date.now() - this.lastSnapshotAt >= (this.options.snapshotIntervalMs ?? 60_000);
  }

  /** Saves the projection as it is now (a consistent cut: taken synchronously); one save at a time. */
  saveSnapshot(): Promise<void> {
    if (this.snapshots === undefined || this.saving !== undefined || !this.caughtUp) return this.saving ?? Promise.resolve();
    const taken = this.sinceSnapshot;
    this.sinceSnapshot = 0;
    this.lastSnapshotAt = Date.now();
    const seq = this.appliedSeq;
    this.saving = this.snapshots
      .save(seq)
      .then(
        (bytes) => this.options.logger.debug({ kind: this.kind, seq, bytes }, "projection snapshot saved"),
        (err: Error) => {
          this.sinceSnapshot += taken;
          this.options.logger.warn({ err, kind: this.kind }, "projection snapshot not saved; a later start folds more of the stream");
        },
      )
      .finally(() => (this.saving = undefined));
    return this.saving;
  }
}

/** Runs `look` until it succeeds, pausing between tries, until `deadline` (performance.now()); then the last error. */
async function retryUntil<T>(deadline: number, look: () => Promise<T>, onRetry: (err: unknown) => void): Promise<T> {
  let pauseMs = 100;
  for (;;) {
    try {
      return await look();
    } catch (err) {
      if (performance.now() + pauseMs >= deadline) throw err;
      onRetry(err);
      await pause(pauseMs);
      pauseMs = Math.min(2 * pauseMs, 2000);
    }
  }
}
