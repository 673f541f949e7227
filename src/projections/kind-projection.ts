/**
 * A kind's projection: every event of one kind (`<prefix>.events.<kind>.*`)
 * folded into a state per id, with the last subject sequence and event
 * instant of each id. One per kind and service instance, fed by one stream
 * follower. It is where actors take their state from (no read on the request
 * path), where the read endpoints and indexes look, and what snapshots save.
 *
 * This class only puts together the parts, each with one job: the pure
 * records and replies (`fold-store.ts`), the follower and the freshness
 * looks (the read side's I/O, in `follow/`), and when snapshots are saved
 * (`snapshot-schedule.ts`). Every wait it offers is bounded:
 * {@link KindProjection.reached} and {@link KindProjection.fresh} reject
 * with a LogUnavailableError at their deadline.
 */
import type { Logger } from "pino";
import { OP_TIMEOUT_MS } from "../events/deadline.ts";
import { type EventLog } from "../events/event-log.ts";
import { type RecordedEvent } from "../events/envelope.ts";
import { type ActorKind } from "../contract/subjects.ts";
import { FOREIGN_EVENT_WARNING, FoldStore } from "./fold-store.ts";
import { FreshnessLooks } from "./follow/freshness-looks.ts";
import { ProjectionFollower, type Patiently } from "./follow/projection-follower.ts";
import { applyParts, IncrementalSnapshots, type SnapshotCompaction } from "./incremental-snapshots.ts";
import { foldBacklogInWorker } from "./backlog-in-worker.ts";
import type { FoldListener, KindFold, ProjectionRecord, SnapshotExtra } from "./kind-fold.ts";
import type { RememberedReply, ReplyMemoryLimits } from "./reply-memory.ts";
import { SnapshotSchedule } from "./snapshot-schedule.ts";
import type { ProjectionSnapshotStore } from "./snapshot-stores.ts";

export type { FoldListener, KindFold, LateReply, ProjectionRecord, SnapshotExtra } from "./kind-fold.ts";

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
  /** Where a start with no usable snapshot may fold a long backlog on a worker thread; none: always on this one. */
  readonly backlogWorker?: BacklogWorker | undefined;
}

/** The backlog worker a projection may start. */
export interface BacklogWorker {
  /** The worker's module (it knows the kinds' logic, which this layer does not). */
  readonly entry: URL;
  /** What the worker builds the kind's logic from. */
  readonly settings: unknown;
  /**
   * Used when the kind's last event is at least this far into the stream
   * (default 100,000). Below it, starting the worker costs more than it saves.
   */
  readonly minSeq?: number | undefined;
}

/** Default of {@link BacklogWorker.minSeq}. */
const BACKLOG_WORKER_MIN_SEQ = 100_000;

/** One kind's folded states, kept current by a follower. */
export class KindProjection<State> {
  readonly kind: ActorKind;
  private readonly store: FoldStore<State>;
  private readonly follower: ProjectionFollower;
  private readonly looks: FreshnessLooks;
  private readonly snapshots: IncrementalSnapshots<State> | undefined;
  private readonly schedule: SnapshotSchedule | undefined;
  private readonly restoreListeners: (() => void)[] = [];
  private readonly extras = new Map<string, SnapshotExtra>();
  private started: Promise<void> | undefined;
  private stopped = false;
  /** The stream sequence the latest snapshot loaded at start (or the backlog folded on a worker) covered (0: folded from the start). */
  startedFromSeq = 0;
  /** Whether the start folded the backlog on a worker thread (then {@link startedFromSeq} is where the worker stopped). */
  backlogOnWorker = false;

  constructor(private readonly options: KindProjectionOptions<State>) {
    const { fold, log, filter, logger } = options;
    this.kind = fold.kind;
    const opTimeoutMs = options.opTimeoutMs ?? OP_TIMEOUT_MS;
    this.store = new FoldStore({
      ...{ fold, replies: options.replies, now: options.now ?? Date.now },
      onForeign: (foreign) => logger.warn({ kind: fold.kind, ...foreign }, FOREIGN_EVENT_WARNING),
    });
    const { records, replies } = this.store;
    const store = options.snapshots;
    this.snapshots =
      store &&
      new IncrementalSnapshots({
        ...{ store, fold, logger, compaction: options.snapshotCompaction },
        ...{ records, replies, extras: this.extras },
      });
    const snapshots = this.snapshots;
    this.schedule =
      snapshots &&
      new SnapshotSchedule({
        ...{ kind: this.kind, logger, every: options.snapshotEvery, intervalMs: options.snapshotIntervalMs },
        ...{ save: (seq) => snapshots.save(seq), seq: () => this.follower.seq },
      });
    this.follower = new ProjectionFollower({
      ...{ log, kind: this.kind, filter, logger, opTimeoutMs, stallMs: options.stallMs, startTimeoutMs: options.startTimeoutMs },
      deliver: (m) => this.store.foldStored(m),
      delivered: () => this.schedule?.folded(),
      tick: () => this.schedule?.tick(),
    });
    this.looks = new FreshnessLooks({
      ...{ log, kind: this.kind, filter, follower: this.follower, opTimeoutMs },
      readTimeoutMs: options.readTimeoutMs ?? opTimeoutMs,
    });
  }

  /** The fold this projection applies. */
  get fold(): KindFold<State> {
    return this.options.fold;
  }

  /** How often the follower was re-created (diagnostics, tests). */
  get restarts(): number {
    return this.follower.restarts;
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
    await this.follower.stop();
    await this.schedule?.stop(this.started !== undefined);
    this.follower.release();
  }

  /** Registers a listener called after every folded entry. */
  onFold(listener: FoldListener<State>): void {
    this.store.onFold(listener);
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
    return this.store.record(id);
  }

  /** One id's folded state. */
  get(id: string): State {
    return this.store.get(id);
  }

  /** One id's folded state; undefined when it has no event. */
  find(id: string): State | undefined {
    return this.store.records.get(id)?.state;
  }

  /** Every id's folded state (ids with at least one event). */
  *states(): IterableIterator<State> {
    for (const record of this.store.records.values()) yield record.state;
  }

  /** Every id with at least one event, and its state. */
  *entries(): IterableIterator<[string, State]> {
    for (const [id, record] of this.store.records) yield [id, record.state];
  }

  /** How many ids have a record. */
  get size(): number {
    return this.store.records.size;
  }

  /** The last stream sequence the follower folded (of this kind). */
  get seq(): number {
    return this.follower.seq;
  }

  /** Events of the kind the stream holds that the follower has not delivered yet, as of its last delivery. */
  get lag(): number {
    return this.follower.lag;
  }

  /**
   * Replaces every folded state with `fn(id, state)`: housekeeping (dropping
   * what is past retention) that must leave every answer unchanged.
   */
  compact(fn: (id: string, state: State) => State): number {
    return this.store.compact(fn);
  }

  /** Forgets replies older than the reply horizon at `now`. */
  pruneReplies(now: number): void {
    this.store.replies.prune(now);
  }

  /** The reply remembered for the event appended with `msgId`, if any. */
  remembered(msgId: string): RememberedReply | undefined {
    return this.store.replies.get(msgId);
  }

  /** The fingerprint of the latest request remembered with `requestId` on this kind, and its event's instant. */
  requestOf(requestId: string): { readonly fingerprint: string; readonly atMs: number } | undefined {
    return this.store.replies.requestOf(requestId);
  }

  /** How many replies are remembered, and about how many bytes they take. */
  get replies(): { entries: number; bytes: number } {
    return this.store.replies.size;
  }

  /** Starts noting where the event appended with `msgId` lands, whoever folds it first. */
  watch(msgId: string): void {
    this.store.watched.watch(msgId);
  }

  /** Where the watched `msgId` landed and the reply it owes, once folded. */
  replyRecordedFor(msgId: string): { reply: unknown; seq: number } | undefined {
    return this.store.watched.found(msgId);
  }

  /** Stops watching `msgId`. */
  unwatch(msgId: string): void {
    this.store.watched.unwatch(msgId);
  }

  /**
   * Applies an event this instance appended, right after its acknowledgement.
   * `stateAfter` is the state the actor computed from the record it decided
   * on; ignored when the follower got there first.
   */
  applyOwn(id: string, recorded: RecordedEvent, stateAfter: State, atMs: number, reply: unknown): void {
    this.store.applyOwn(id, recorded, stateAfter, atMs, reply);
  }

  /** Resolves once the follower has folded stream sequence `seq`; rejects at `timeoutMs`. */
  reached(seq: number, timeoutMs?: number): Promise<void> {
    return this.follower.reached(seq, timeoutMs);
  }

  /**
   * Resolves once every event of the kind the stream held when called is
   * folded (read-your-writes across instances); rejects at `timeoutMs`.
   * Concurrent callers share looks at the stream.
   */
  fresh(timeoutMs?: number): Promise<void> {
    return this.looks.fresh(timeoutMs);
  }

  /**
   * Resolves once the projection holds the last event of one subject (an
   * actor's), whoever wrote it; rejects at `timeoutMs`.
   */
  freshSubject(subject: string, timeoutMs?: number): Promise<void> {
    return this.looks.freshSubject(subject, timeoutMs);
  }

  /** Saves the projection as it is now (a consistent cut: taken synchronously); one save at a time. */
  saveSnapshot(): Promise<void> {
    return this.schedule?.save() ?? Promise.resolve();
  }

  private async begin(): Promise<void> {
    const from = await this.follower.start((patiently) => this.restore(patiently));
    this.startedFromSeq = from;
    this.schedule?.caughtUpWithStream();
    this.options.logger.debug(
      { kind: this.kind, fromSeq: from, seq: this.follower.seq, ids: this.store.records.size },
      "projection caught up",
    );
  }

  /**
   * Loads the latest usable snapshot, or else folds a long backlog on a
   * worker thread; returns the sequence the records now cover (0: none).
   */
  private async restore(patiently: Patiently): Promise<number> {
    const lastSeq = () => patiently("reading the stream's last sequence", () => this.options.log.lastSeq());
    let seq = (await this.snapshots?.restore(lastSeq)) ?? 0;
    if (seq === 0) seq = await this.foldBacklogInWorker(patiently);
    if (seq > 0) for (const listener of this.restoreListeners) listener();
    return seq;
  }

  /**
   * With no snapshot, a kind whose last event lies far into the stream has
   * its backlog folded on a worker thread (backlog-in-worker.ts) and taken in
   * as a snapshot would be; returns the sequence it covers. 0 when the
   * backlog is short, the kind keeps data beside its states that only this
   * thread's listeners build (an extra the fold's `backlogExtras` lacks), or
   * the worker fails (then this thread folds it all, as without a worker,
   * after a warning).
   */
  private async foldBacklogInWorker(patiently: Patiently): Promise<number> {
    const { log, filter, fold, logger, backlogWorker: worker } = this.options;
    const extrasBuilt = [...this.extras.keys()].every((name) => fold.backlogExtras?.[name] !== undefined);
    if (worker === undefined || log.scan === undefined || !extrasBuilt) return 0;
    const opTimeoutMs = this.options.opTimeoutMs ?? OP_TIMEOUT_MS;
    const toSeq = await patiently("reading the stream's last sequence", () => log.lastSubjectSeq(filter, opTimeoutMs));
    if (toSeq < (worker.minSeq ?? BACKLOG_WORKER_MIN_SEQ)) return 0;
    const folded = await foldBacklogInWorker({
      entry: worker.entry,
      log,
      filter,
      logger,
      stallMs: Math.max(opTimeoutMs, 10_000),
      replies: this.options.replies ?? {},
      now: this.options.now ?? Date.now,
      job: { kind: this.kind, settings: worker.settings, foldVersion: fold.foldVersion, toSeq },
    });
    if (folded === undefined) return 0;
    const { part, messages, base } = folded;
    const target = { fold, records: this.store.records, replies: this.store.replies, extras: this.extras };
    if (this.snapshots === undefined) applyParts([part], target);
    else {
      this.snapshots.adopt(part);
      // Written now, as the worker encoded it: no save encodes every record on this thread, and a start stopped soon after has it.
      const snapshots = this.snapshots;
      this.schedule?.saveFoldedElsewhere(() => snapshots.saveEncoded(base), messages);
    }
    this.backlogOnWorker = true;
    return part.seq;
  }
}
