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
import { OP_TIMEOUT_MS, pause, withDeadline } from "../events/deadline.ts";
import { type EventLog, LogUnavailableError, ReconnectedError, type Following, type StoredMessage } from "../events/event-log.ts";
import type { RecordedEvent } from "../events/envelope.ts";
import type { ActorKind } from "../contract/subjects.ts";
import { FOREIGN_EVENT_WARNING, FoldStore, type RememberedReply, type ReplyMemoryLimits } from "./fold-store.ts";
import { FreshnessLooks } from "./follow/freshness-looks.ts";
import { applyParts, IncrementalSnapshots, type SnapshotCompaction } from "./incremental-snapshots.ts";
import { foldBacklogInWorker } from "./backlog-in-worker.ts";
import type { FoldListener, KindFold, ProjectionRecord, SnapshotExtra } from "./kind-fold.ts";
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
  /** While a start catches up, how often it logs how far it is (default 10 s). */
  readonly progressEveryMs?: number;
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
      progressEveryMs: options.progressEveryMs,
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

  /** Registers a listener called after every folded entry; returns what unregisters it. */
  onFold(listener: FoldListener<State>): () => void {
    return this.store.onFold(listener);
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
  /** The id the latest request remembered with `requestId` was for (a retry whose target no longer resolves finds it here). */
  idOfRequest(requestId: string): string | undefined {
    return this.store.replies.idOfRequest(requestId);
  }

  /** The fingerprint of the latest request remembered with `requestId`, and its event's instant (what tells a reuse from a retry). */
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

/*
 * When a kind projection saves a snapshot: after a number of folded events
 * (but no sooner than a gap after the last save) or a while after the last
 * save when anything changed, never while the start folds its backlog (each
 * save would encode every record), one save at a time, and a failed save's
 * events counted again.
 */

/** Settings of a {@link SnapshotSchedule}. */
export interface SnapshotScheduleOptions {
  readonly kind: ActorKind;
  /** Saves the projection as of stream sequence `seq` (a consistent cut taken synchronously); resolves to the bytes written. */
  readonly save: (seq: number) => Promise<number>;
  /** The sequence the projection has folded up to, read when a save starts. */
  readonly seq: () => number;
  readonly logger: Logger;
  /** Save after this many events folded since the last one (default 10,000)... */
  readonly every?: number | undefined;
  /** ...or this long after the last one when anything changed (default 60 s). */
  readonly intervalMs?: number | undefined;
  /**
   * ...but never sooner than this after the last one started (default 5 s):
   * under load a save costs about the same whatever the events it covers (the
   * changed records, the latest replies), so spacing them bounds their share
   * of the thread, at the price of a start folding at most this long's events
   * more.
   */
  readonly minGapMs?: number | undefined;
  /** The clock the interval is measured on (default: the system's). */
  readonly now?: () => number;
}

/** Decides when the projection's snapshots are saved, and saves them one at a time. */
export class SnapshotSchedule {
  private sinceSnapshot = 0;
  private lastSnapshotAt = 0;
  private saving: Promise<void> | undefined;
  /** Set once the start has caught up: no snapshot is taken while folding the backlog. */
  private caughtUp = false;
  private readonly every: number;
  private readonly intervalMs: number;
  private readonly minGapMs: number;
  private readonly now: () => number;

  constructor(private readonly options: SnapshotScheduleOptions) {
    this.every = options.every ?? 10_000;
    this.intervalMs = options.intervalMs ?? 60_000;
    this.minGapMs = Math.min(options.minGapMs ?? 5_000, this.intervalMs);
    this.now = options.now ?? Date.now;
  }

  /** Counts one folded event, and saves when that makes a snapshot due. */
  folded(): void {
    this.sinceSnapshot++;
    if (this.due()) void this.save();
  }

  /** Counts events folded elsewhere (a start's backlog on a worker thread): a snapshot is due as if this thread had folded them. */
  foldedElsewhere(count: number): void {
    this.sinceSnapshot += count;
  }

  /**
   * Saves with `save` what `count` events folded elsewhere made, encoded
   * elsewhere too (a start's backlog, by its worker), even before the start
   * caught up (it encodes nothing here); should it fail, or another save be
   * under way, those events are due again.
   */
  saveFoldedElsewhere(save: () => Promise<number>, count: number): void {
    const { kind, logger } = this.options;
    if (this.saving !== undefined) return this.foldedElsewhere(count);
    this.lastSnapshotAt = this.now();
    this.saving = save()
      .then(
        (bytes) => logger.debug({ kind, bytes }, "projection snapshot saved (the backlog worker's)"),
        (err: Error) => {
          this.sinceSnapshot += count;
          logger.warn({ err, kind }, "projection snapshot not saved; a later start folds more of the stream");
        },
      )
      .finally(() => (this.saving = undefined));
  }

  /** Saves when the interval (or a count reached during the gap) made a snapshot due (called periodically). */
  tick(): void {
    if (this.due()) void this.save();
  }

  /** The start has caught up: from now on snapshots are taken, one at once for a long backlog so the next start skips it. */
  caughtUpWithStream(): void {
    this.caughtUp = true;
    this.lastSnapshotAt = this.now();
    if (this.sinceSnapshot >= this.every) void this.save();
  }

  /** A last save when anything changed since the previous one (`started`: the projection ever started), else waits for one running. */
  async stop(started: boolean): Promise<void> {
    if (started && this.sinceSnapshot > 0) await this.save();
    else await this.saving;
  }

  /** Saves the projection as it is now; one save at a time, none before the start caught up. */
  save(): Promise<void> {
    if (this.saving !== undefined || !this.caughtUp) return this.saving ?? Promise.resolve();
    const { kind, logger } = this.options;
    const taken = this.sinceSnapshot;
    this.sinceSnapshot = 0;
    this.lastSnapshotAt = this.now();
    const seq = this.options.seq();
    this.saving = this.options
      .save(seq)
      .then(
        (bytes) => logger.debug({ kind, seq, bytes }, "projection snapshot saved"),
        (err: Error) => {
          this.sinceSnapshot += taken;
          logger.warn({ err, kind }, "projection snapshot not saved; a later start folds more of the stream");
        },
      )
      .finally(() => (this.saving = undefined));
    return this.saving;
  }

  /** Enough events since the last save and the gap passed, or anything at all and the interval passed. */
  private due(): boolean {
    if (this.sinceSnapshot === 0) return false;
    const since = this.now() - this.lastSnapshotAt;
    return since >= (this.sinceSnapshot >= this.every ? this.minGapMs : this.intervalMs);
  }
}

/*
 * The read side's I/O for one kind: an ordered follower of the kind's
 * subjects that hands every stored message to the fold in stream order,
 * the sequence it reached, bounded waits for a sequence, and a watchdog that
 * re-creates a follower that stops moving while someone waits on it (from
 * the sequence after the last one it delivered).
 */

/** Runs a look at the stream until it succeeds or the start's deadline passes. */
export type Patiently = <T>(what: string, look: () => Promise<T>) => Promise<T>;

/** Settings of a {@link ProjectionFollower}. */
export interface ProjectionFollowerOptions {
  readonly log: EventLog;
  readonly kind: ActorKind;
  /** The kind's subject filter (`<prefix>.events.<kind>.*`). */
  readonly filter: string;
  readonly logger: Logger;
  /** Deadline of each look at the stream (default 5000 ms). */
  readonly opTimeoutMs: number;
  /** A follower awaited by someone that delivers nothing for this long is re-created (default 1000 ms). */
  readonly stallMs?: number | undefined;
  /** How long a start may take to catch up with the stream before it fails (default 300 s). */
  readonly startTimeoutMs?: number | undefined;
  /** While the start catches up, how often it logs how far it is (default 10 s). */
  readonly progressEveryMs?: number | undefined;
  /** Folds one message the follower delivered (before the follower's sequence moves past it). */
  readonly deliver: (message: StoredMessage) => void;
  /** Called once the follower's sequence moved past a delivered message. */
  readonly delivered: () => void;
  /** Called every `stallMs` while following. */
  readonly tick: () => void;
}

interface Waiter {
  readonly seq: number;
  readonly resolve: () => void;
}

/** Follows one kind's subjects into its fold and answers waits for a sequence. */
export class ProjectionFollower {
  /** The live follower (undefined before the start follows, and while its first creation is tried). */
  following: Following | undefined;
  /** How often the follower was re-created (diagnostics, tests). */
  restarts = 0;
  private appliedSeq = 0;
  private pending = 0;
  private waiters: Waiter[] = [];
  private watchdog: NodeJS.Timeout | undefined;
  private lastProgressSeq = 0;
  private stopped = false;

  constructor(private readonly options: ProjectionFollowerOptions) {}

  /** The last stream sequence the follower folded (of this kind). */
  get seq(): number {
    return this.appliedSeq;
  }

  /** Events of the kind the stream holds that the follower has not delivered yet, as of its last delivery. */
  get lag(): number {
    return this.pending;
  }

  /**
   * Gets the sequence to follow from (`restore`, whose looks are retried),
   * follows the stream from the one after it, and resolves once every event
   * the stream held on the filter is delivered; all within the start's
   * deadline. Resolves to the sequence it followed from.
   */
  async start(restore: (patiently: Patiently) => Promise<number>): Promise<number> {
    const { log, filter, kind, logger, opTimeoutMs } = this.options;
    const startDeadline = performance.now() + (this.options.startTimeoutMs ?? 300_000);
    // A stream just created on a cluster, or a leader being elected, may not answer at once: retry each look until the start's deadline.
    const patiently: Patiently = (what, look) =>
      retryUntil(startDeadline, look, (err) => logger.warn({ err, kind }, `${what} failed; retrying`));
    const from = await restore(patiently);
    this.appliedSeq = from;
    this.lastProgressSeq = from;
    const last = await patiently("reading the stream's last sequence", () => log.lastSubjectSeq(filter, opTimeoutMs));
    // A long catch-up is otherwise silent: say how far it is, so that a start of minutes is not taken for a hang.
    const progress = setInterval(
      () => logger.info({ kind, seq: this.appliedSeq, lastSeq: last }, "projection catching up with the stream"),
      this.options.progressEveryMs ?? 10_000,
    );
    progress.unref();
    try {
      await this.catchUp(last);
      this.following = await patiently("following the stream", () =>
        log.follow(this.appliedSeq + 1, (m) => this.onMessage(m), {
          filter,
          onRestart: (err, nextSeq) => {
            this.restarts++;
            // After a reconnect this is routine (the reconnect itself is logged once); any other cause is worth a warning.
            if (err instanceof ReconnectedError) logger.debug({ kind, nextSeq }, "projection follower re-created after the reconnect");
            else logger.warn({ err, kind, nextSeq }, "projection follower re-created");
          },
        }),
      );
      this.watchdog = setInterval(() => this.checkProgress(), this.options.stallMs ?? 1000);
      this.watchdog.unref();
      await this.reached(last, Math.max(1, startDeadline - performance.now()));
    } finally {
      clearInterval(progress);
    }
    return from;
  }

  /**
   * Folds the events of the kind up to `last` with one bounded read (which
   * the log may filter on this side: src/events/scan-plan.ts) before the
   * follower starts: a follower's consumer is filtered by the server, slow
   * over a long backlog of many subjects. A read that fails leaves the rest
   * to the follower.
   */
  private async catchUp(last: number): Promise<void> {
    const { log, filter, kind, logger, opTimeoutMs } = this.options;
    if (log.scan === undefined || last <= this.appliedSeq) return;
    try {
      await log.scan({ fromSeq: this.appliedSeq + 1, toSeq: last, filter }, (m) => this.onMessage(m), opTimeoutMs);
    } catch (err) {
      logger.warn({ err, kind, seq: this.appliedSeq, lastSeq: last }, "projection catch-up read failed; the follower reads the rest");
    }
  }

  /** Stops following; waits still pending are released by {@link release}. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.watchdog);
    await this.following?.stop();
  }

  /** Resolves every wait still pending (the projection stopped). */
  release(): void {
    for (const w of this.waiters.splice(0)) w.resolve();
  }

  /** Resolves once the follower has delivered stream sequence `seq`; rejects at `timeoutMs`. */
  reached(seq: number, timeoutMs = this.options.opTimeoutMs): Promise<void> {
    if (this.appliedSeq >= seq) return Promise.resolve();
    const { kind } = this.options;
    if (this.stopped) return Promise.reject(new LogUnavailableError(`the ${kind} projection is stopped`, false));
    const waiting = new Promise<void>((resolve) => this.waiters.push({ seq, resolve }));
    return withDeadline(waiting, timeoutMs, `the ${kind} projection to reach sequence ${seq}`);
  }

  private onMessage(message: StoredMessage): void {
    if (message.seq <= this.appliedSeq) return;
    this.pending = message.pending ?? 0;
    this.options.deliver(message);
    this.appliedSeq = message.seq;
    if (this.waiters.length > 0) this.wake();
    this.options.delivered();
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
        { kind: this.options.kind, seq: this.appliedSeq, waiting: this.waiters.length },
        "projection follower stalled; re-creating it",
      );
      this.restarts++;
      this.following?.restart();
    }
    this.options.tick();
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
