/**
 * When a kind projection saves a snapshot: after a number of folded events
 * or a while after the last save when anything changed, never while the
 * start folds its backlog (each save would encode every record), one save
 * at a time, and a failed save's events counted again.
 */
import type { Logger } from "pino";
import type { ActorKind } from "../contract/subjects.ts";

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
  private readonly now: () => number;

  constructor(private readonly options: SnapshotScheduleOptions) {
    this.every = options.every ?? 10_000;
    this.intervalMs = options.intervalMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  /** Counts one folded event, and saves when that makes a snapshot due. */
  folded(): void {
    this.sinceSnapshot++;
    if (this.sinceSnapshot >= this.every || this.due()) void this.save();
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

  /** Saves when the interval made a snapshot due (called periodically). */
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

  private due(): boolean {
    return this.sinceSnapshot > 0 && this.now() - this.lastSnapshotAt >= this.intervalMs;
  }
}
