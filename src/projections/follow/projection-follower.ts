/**
 * The read side's I/O for one kind: an ordered follower of the kind's
 * subjects that hands every stored message to the fold in stream order,
 * the sequence it reached, bounded waits for a sequence, and a watchdog that
 * re-creates a follower that stops moving while someone waits on it (from
 * the sequence after the last one it delivered).
 */
import type { Logger } from "pino";
import { LogUnavailableError, ReconnectedError, type EventLog, type Following, type StoredMessage } from "../../events/event-log.ts";
import { pause, withDeadline } from "../../events/deadline.ts";
import type { ActorKind } from "../../contract/subjects.ts";

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
    this.following = await patiently("following the stream", () =>
      log.follow(from + 1, (m) => this.onMessage(m), {
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
    const last = await patiently("reading the stream's last sequence", () => log.lastSubjectSeq(filter, opTimeoutMs));
    await this.reached(last, Math.max(1, startDeadline - performance.now()));
    return from;
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
