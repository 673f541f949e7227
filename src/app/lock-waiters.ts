/**
 * Blocking acquire (docs/locks.md, "Waiting for a lock"): the runtime side
 * of the wait queue. A waiting acquire takes one turn to join the queue
 * (its `LockWaiterQueued`), then is parked here — holding no actor turn —
 * until the lock's projected state says it may take the lock: it is looked
 * at again whenever the lock's projection folds an event (from any instance)
 * and at the instants the pure queue arithmetic says something may change
 * by time alone (lease expiry, the head's window end, its own give-up
 * instant). Only then does it take a `claim` turn, which decides from the
 * same state and appends its `LockAcquired`. Every wait is bounded by the
 * request's `waitMs` (on the clock, and on the timer clock in case the
 * clock jumps back), plus one request timeout for the last turn. Under
 * sessions (1.2) the lock's state is read with its sessions' ends, and a
 * session's close wakes every parked request: a lock it held is free, or a
 * waiter under it lost its place.
 */
import type { Logger } from "pino";
import type { ActorRuntime, Arrival } from "../actors/actor-runtime.ts";
import type { Clock } from "../actors/clock.ts";
import { unavailable, type TurnResult } from "../actors/turn-result.ts";
import type { KindProjection } from "../projections/index.ts";
import type { LockState } from "../projections/lock.ts";
import { nextQueueChangeAt, queueAt } from "../projections/lock-queue.ts";
import { resolveSessions } from "../projections/lock-sessions.ts";
import { sessionEndMs } from "../projections/session.ts";
import type { AcquireLock, ClaimLock } from "../logic/lock/commands.ts";
import { isWaitingReply } from "../logic/lock/waiting-reply.ts";
import { LockTurns } from "./lock-turns.ts";

/** Settings of {@link LockWaiters}. */
export interface LockWaitersOptions {
  readonly runtime: ActorRuntime;
  readonly projection: KindProjection<LockState>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How lock turns run (with the session table); default plain turns of the runtime. */
  readonly turns?: LockTurns;
  /** The timer clock (default performance.now). */
  readonly monotonic?: () => number;
  /** A parked request looks again at least this often, whatever it was told (default 1000 ms). */
  readonly recheckMs?: number;
}

/** What a waiting acquire asks for. */
export interface WaitingAcquire {
  readonly owner: string;
  readonly ttlMs?: number | undefined;
  readonly waitMs: number;
  readonly requestId?: string | undefined;
  readonly session?: string | undefined;
}

interface Waiting {
  readonly owner: string;
  readonly session: string | undefined;
  readonly ttlMs: number | undefined;
  readonly requestId: string | undefined;
  readonly place: number;
  /** When the request stops waiting, on the clock and on the timer clock. */
  readonly giveUpAt: number;
  readonly giveUpMono: number;
  readonly waitingSince: number;
}

/** Parks waiting lock acquires and wakes them when their lock may have become theirs. */
export class LockWaiters {
  /** Wake-up callbacks of parked requests, by lock name. */
  private readonly parked = new Map<string, Set<() => void>>();
  private readonly monotonic: () => number;
  private readonly recheckMs: number;
  private readonly turns: LockTurns;
  private stopping = false;

  constructor(private readonly options: LockWaitersOptions) {
    this.monotonic = options.monotonic ?? (() => performance.now());
    this.recheckMs = options.recheckMs ?? 1000;
    this.turns = options.turns ?? new LockTurns(options.runtime, options.projection);
    options.projection.onFold((name) => this.wake(name));
    // Which locks a closed session held or waited on is in their states; parked requests are few, so all look again.
    this.turns.sessions?.onClose(() => {
      for (const name of [...this.parked.keys()]) this.wake(name);
    });
  }

  /** Requests parked right now. */
  get size(): number {
    let n = 0;
    for (const set of this.parked.values()) n += set.size;
    return n;
  }

  /**
   * Runs an acquire that may wait: answers the lease, LEASE_EXISTS (with
   * `waitedMs` once it waited), another refusal, or UNAVAILABLE; within
   * `waitMs` plus the request timeout.
   */
  async acquire(name: string, request: WaitingAcquire, arrival: Arrival = {}): Promise<TurnResult> {
    const { clock } = this.options;
    const waitingSince = clock.now();
    const startedMono = this.monotonic();
    const command: AcquireLock = {
      op: "acquire",
      owner: request.owner,
      ttlMs: request.ttlMs,
      waitMs: request.waitMs,
      requestId: request.requestId,
      session: request.session,
    };
    const joined = await this.turns.execute(name, command, arrival);
    if (!joined.ok || !isWaitingReply(joined.reply)) return joined;
    return this.wait(name, {
      owner: request.owner,
      session: request.session,
      ttlMs: request.ttlMs,
      requestId: request.requestId,
      place: joined.reply.waiting.place,
      giveUpAt: waitingSince + request.waitMs,
      giveUpMono: startedMono + request.waitMs,
      waitingSince,
    });
  }

  /** Answers every parked request UNAVAILABLE (the instance is stopping); their places lapse by themselves. */
  stop(): void {
    if (!this.stopping && this.size > 0)
      this.options.logger.info({ parked: this.size }, "answering parked lock acquires UNAVAILABLE: the instance is stopping");
    this.stopping = true;
    for (const set of this.parked.values()) for (const wake of set) wake();
  }

  private async wait(name: string, w: Waiting): Promise<TurnResult> {
    const { clock, projection } = this.options;
    for (;;) {
      if (this.stopping) return unavailable("the service instance is stopping; the queue place lapses", 100);
      const now = clock.now();
      const seen = projection.record(name).seq;
      // The timer clock ends the wait too, should the clock have jumped back.
      const due = now >= w.giveUpAt || this.monotonic() >= w.giveUpMono;
      if (due || this.mayClaim(this.stateOf(name, now), now, w.place)) {
        const claim: ClaimLock = {
          op: "claim",
          owner: w.owner,
          session: w.session,
          ttlMs: w.ttlMs,
          place: w.place,
          giveUpAt: due ? Math.min(w.giveUpAt, now) : w.giveUpAt,
          waitingSince: w.waitingSince,
        };
        const result = await this.turns.execute(name, claim, { requestId: w.requestId });
        if (!result.ok || !isWaitingReply(result.reply)) return result;
      }
      await this.park(name, w, seen, now);
    }
  }

  /** The lock's projected state, read with its sessions' ends as they stand (src/projections/lock-sessions.ts). */
  private stateOf(name: string, now: number): LockState {
    const state = this.options.projection.get(name);
    const sessions = this.turns.sessions;
    return sessions === undefined ? state : resolveSessions(state, sessions, now).state;
  }

  /** When the request's own session ends, as known now (Infinity without one). */
  private sessionEndOf(w: Waiting): number {
    const session = w.session === undefined ? undefined : this.turns.sessions?.get(w.session);
    return session === undefined ? Infinity : sessionEndMs(session);
  }

  /** The projected state says the place may take the lock now, or has lapsed (then the claim turn says what follows). */
  private mayClaim(state: LockState, now: number, place: number): boolean {
    const queue = queueAt(state, now);
    const own = queue.live.find((w) => w.seq === place);
    return own === undefined || (queue.head === own && queue.headMayClaim);
  }

  /**
   * Waits for the lock's next fold, the next instant its queue may change by
   * time, or the give-up instant; at once when a fold came after `seen`
   * (while the last claim turn was answered). The wake-up instant is the
   * next change after `lookedAt`, the instant the wait was last decided at,
   * not after a fresh reading of the clock: that reading may have reached
   * the very expiry `lookedAt` was short of, and an expiry no longer ahead
   * would leave the request asleep until the next recheck. Only the delay
   * is measured from a fresh reading.
   */
  private park(name: string, w: Waiting, seen: number, lookedAt: number): Promise<void> {
    const { clock, projection } = this.options;
    if (projection.record(name).seq !== seen) return Promise.resolve();
    const wakeAt = Math.min(w.giveUpAt, nextQueueChangeAt(this.stateOf(name, lookedAt), lookedAt), this.sessionEndOf(w));
    const delayMs = Math.max(0, Math.min(wakeAt - clock.now(), w.giveUpMono - this.monotonic(), this.recheckMs));
    let set = this.parked.get(name);
    if (set === undefined) {
      set = new Set();
      this.parked.set(name, set);
    }
    const waiting = set;
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiting.delete(done);
        if (waiting.size === 0 && this.parked.get(name) === waiting) this.parked.delete(name);
        resolve();
      };
      const timer = setTimeout(done, Math.ceil(delayMs));
      waiting.add(done);
    });
  }

  private wake(name: string): void {
    const set = this.parked.get(name);
    if (set === undefined) return;
    for (const wake of [...set]) wake();
  }
}
