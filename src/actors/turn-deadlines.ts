/**
 * The bound on every turn as a whole, with one timer for the whole runtime
 * instead of one per request. Each step of a turn is given the time left,
 * but a step that does not keep its own deadline (a log whose append never
 * answers) must not hold the answer: past its deadline a turn is answered
 * UNAVAILABLE by the sweep, and its actor's mailbox moves on.
 *
 * Deadlines are swept every `resolutionMs`, so an abandoned turn is answered
 * at most that long after its deadline; turns that keep their steps' own
 * deadlines (every real one) answer on time by themselves.
 */

/** A turn being bounded: `expire` answers it (once) when its deadline passes. */
export interface BoundedTurn {
  readonly deadline: number;
  expire(): void;
}

/** Settings of {@link TurnDeadlines}. */
export interface TurnDeadlinesOptions {
  /** The timer clock deadlines are measured on. */
  readonly monotonic: () => number;
  /** How often deadlines are swept while any turn runs (default 100 ms). */
  readonly resolutionMs?: number;
}

/** Answers turns past their deadline, with one shared timer that runs only while turns do. */
export class TurnDeadlines {
  private readonly turns = new Set<BoundedTurn>();
  private timer: NodeJS.Timeout | undefined;
  private readonly resolutionMs: number;

  constructor(private readonly options: TurnDeadlinesOptions) {
    this.resolutionMs = options.resolutionMs ?? 100;
  }

  /** Starts bounding `turn`; call {@link done} when it answered. */
  add(turn: BoundedTurn): void {
    this.turns.add(turn);
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.sweep(), this.resolutionMs);
      this.timer.unref();
    }
  }

  /** `turn` answered by itself. */
  done(turn: BoundedTurn): void {
    this.turns.delete(turn);
    if (this.turns.size === 0) this.stopTimer();
  }

  /** Turns being bounded now. */
  get size(): number {
    return this.turns.size;
  }

  private sweep(): void {
    const now = this.options.monotonic();
    for (const turn of this.turns) {
      if (turn.deadline > now) continue;
      this.turns.delete(turn);
      turn.expire();
    }
    if (this.turns.size === 0) this.stopTimer();
  }

  private stopTimer(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
