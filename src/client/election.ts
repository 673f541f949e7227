/**
 * `client.elect(name, {onElected, onDeposed, signal})`: leader election on a
 * lock, as client-go's LeaderElector does it, with the lock's generation as
 * the term. Contenders wait on the lock's watch until it is free, then try to
 * acquire it; the winner keeps it with the lock keeper (renew every ttl / 3)
 * and is told `onElected({generation})`; it is told `onDeposed` the moment it
 * stops leading: a renew refused, its stop, or the lease's local deadline
 * passed. The deadline is judged on this process's monotonic clock,
 * conservatively (from when the acquire or renew was sent), and checked
 * again on every wake (each keeper timer, each `leading` read), so a leader
 * that was paused past its TTL learns it before it does anything else.
 *
 * The generation rises with every acquisition, so a resource that refuses a
 * write carrying a lower generation than one it has seen (fencing) stays safe
 * even against a leader that has not learnt yet that it was deposed.
 */
import { randomUUID } from "node:crypto";
import { LeaseExistsError } from "./errors.ts";
import { keepLock, LockLostError, realTimers, type KeeperTimers, type LockKeeper, type LockLossReason } from "./lock-keeper.ts";
import type { LockWatch, LockWatchOptions } from "./lock-watch.ts";
import type { LockApi } from "./client.ts";

/** What a new leader is told. */
export interface LeaderTerm {
  readonly name: string;
  readonly owner: string;
  /** The term: the lock's generation, a fencing token higher than every earlier leader's. */
  readonly generation: number;
  /** Aborted when this term ends (with a LockLostError, or a LockClosedError when stopped). */
  readonly signal: AbortSignal;
}

/** What a leader is told when its term ends. */
export interface DeposedTerm {
  readonly name: string;
  readonly owner: string;
  readonly generation: number;
  /** Why: the keeper's loss reason, or `stopped` when the election was stopped (the lock is released then). */
  readonly reason: LockLossReason | "stopped";
}

/** Options of `client.elect`. */
export interface ElectOptions {
  /** This contender's owner name on the lock (default a random UUID: one per contender). */
  readonly owner?: string;
  /** Lease TTL (default the server's `lockTtlMs`). */
  readonly ttlMs?: number;
  /** Called when this contender becomes leader. */
  readonly onElected: (term: LeaderTerm) => void;
  /** Called once when a term ends, before anything else this contender does. */
  readonly onDeposed: (term: DeposedTerm) => void;
  /** Stops contending (and resigns, releasing the lock) when aborted. */
  readonly signal?: AbortSignal;
  /** Pause after a failed request before trying again (default 250 ms). */
  readonly retryMs?: number;
  /** Monotonic clock and timers of the keeper (default real ones; tests inject fakes to simulate a pause). */
  readonly timers?: KeeperTimers;
  /** Wall clock the watch judges lease expiry by (default `Date.now`). */
  readonly now?: () => number;
}

/**
 * How long an acquire waits for the lock (0: fail fast, the v1 behaviour).
 * With the wait queue, contenders can queue instead of polling the watch:
 * pass this as the keeper's `waitMs` in {@link Election.acquire}.
 */
export const ELECTION_WAIT_MS = 0;

/** The lock endpoints and watch an election needs. */
export type ElectionLockApi = Pick<LockApi, "acquire" | "renew" | "release" | "get"> & {
  watch(name: string, options?: LockWatchOptions): LockWatch;
};

/** One contender in an election; runs until its signal aborts or {@link Election.stop}. */
export class Election implements AsyncDisposable {
  readonly owner: string;
  /** Resolves when the contender has stopped (and resigned, if it led). */
  readonly done: Promise<void>;
  private readonly stopper = new AbortController();
  private keeper: LockKeeper | undefined;
  /** The term last announced by onElected, and the last whose end was reported (each end is reported once). */
  private elected = 0;
  private reportedEnd = 0;
  private readonly timers: KeeperTimers;

  constructor(
    private readonly api: ElectionLockApi,
    readonly name: string,
    private readonly options: ElectOptions,
    private readonly requestTimeoutMs: number,
  ) {
    this.owner = options.owner ?? randomUUID();
    this.timers = options.timers ?? realTimers;
    const outer = options.signal;
    if (outer !== undefined) {
      if (outer.aborted) this.stopper.abort(outer.reason);
      else outer.addEventListener("abort", () => this.stopper.abort(outer.reason), { once: true, signal: this.stopper.signal });
    }
    this.done = this.run();
  }

  /**
   * Whether this contender leads right now, by the local deadline: reading it
   * after a pause past the TTL ends the term (onDeposed) before it answers.
   */
  get leading(): boolean {
    const keeper = this.keeper;
    if (keeper === undefined) return false;
    if (keeper.held) return true;
    this.deposed(keeper, keeper.lost?.reason ?? "expired");
    return false;
  }

  /** The current term's generation, or undefined when not leading. */
  get generation(): number | undefined {
    return this.leading ? this.keeper!.generation : undefined;
  }

  /** Stops contending; a leader resigns (releases the lock) and is told onDeposed with reason `stopped`. */
  async stop(): Promise<void> {
    this.stopper.abort(new Error("election stopped"));
    await this.done;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  private async run(): Promise<void> {
    const stop = this.stopper.signal;
    // Only the latest state matters here, and a long term must not pile up one state per renew.
    const watch = this.api.watch(this.name, {
      signal: stop,
      latestOnly: true,
      ...(this.options.now === undefined ? {} : { now: this.options.now }),
    });
    try {
      while (!stop.aborted) {
        if (!(await this.untilFree(watch))) break;
        const keeper = await this.acquire();
        if (keeper === undefined) continue;
        this.keeper = keeper;
        // Lost before it could be announced (woke past its deadline already): not a term at all.
        if (!keeper.held) {
          await keeper.close().catch(() => undefined);
          this.keeper = undefined;
          continue;
        }
        this.elected = keeper.generation;
        this.options.onElected({ name: this.name, owner: this.owner, generation: keeper.generation, signal: keeper.signal });
        await untilAborted(keeper.signal, stop);
        if (stop.aborted) {
          this.deposed(keeper, "stopped");
          // Resign: the next contender need not wait for the TTL. A failed release leaves the lease to expire.
          await keeper.close().catch(() => undefined);
        }
        this.keeper = undefined;
      }
    } finally {
      await watch.return();
    }
  }

  /** Waits on the watch until the lock is free (or held by a stale term of this owner); false when stopped. */
  private async untilFree(watch: LockWatch): Promise<boolean> {
    for (;;) {
      let state;
      try {
        state = await watch.next();
      } catch {
        // The watch broke (stream unreachable): fall back to trying the lock itself after a pause.
        return this.pause();
      }
      if (state.done === true) return false;
      if (state.value.lease === null) return true;
    }
  }

  /** One attempt at the lock; undefined when it is held (back to the watch) or the request failed (after a pause). */
  private async acquire(): Promise<LockKeeper | undefined> {
    try {
      return await keepLock(
        this.api,
        {
          name: this.name,
          owner: this.owner,
          ...(this.options.ttlMs === undefined ? {} : { ttlMs: this.options.ttlMs }),
          timers: this.timers,
          onLost: (error: LockLostError) => this.deposed(this.keeper, error.reason, error.generation),
        },
        this.requestTimeoutMs,
      );
    } catch (e) {
      if (e instanceof LeaseExistsError) return undefined;
      await this.pause();
      return undefined;
    }
  }

  /** Reports the end of a term once (keeper's loss, a late wake seen by `leading`, or the stop). */
  private deposed(keeper: LockKeeper | undefined, reason: LockLossReason | "stopped", generation = keeper?.generation): void {
    if (generation === undefined || generation !== this.elected || generation <= this.reportedEnd) return;
    this.reportedEnd = generation;
    if (reason !== "stopped" && keeper !== undefined) {
      // Stop renewing a term we no longer count on; the release is refused harmlessly if another holds it.
      void keeper.close().catch(() => undefined);
    }
    this.options.onDeposed({ name: this.name, owner: this.owner, generation, reason });
  }

  /** Waits `retryMs` (or until stopped); false when stopped. */
  private async pause(): Promise<boolean> {
    const stop = this.stopper.signal;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.options.retryMs ?? 250);
      stop.addEventListener(
        "abort",
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
    return !stop.aborted;
  }
}

/** Resolves when either signal aborts. */
function untilAborted(a: AbortSignal, b: AbortSignal): Promise<void> {
  if (a.aborted || b.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = new AbortController();
    const finish = () => {
      done.abort();
      resolve();
    };
    a.addEventListener("abort", finish, { once: true, signal: done.signal });
    b.addEventListener("abort", finish, { once: true, signal: done.signal });
  });
}
