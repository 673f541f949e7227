/**
 * Blocking acquire (docs/locks.md, "Waiting for a lock"): the runtime side
 * of the wait queue. A waiting acquire takes one turn to join the queue
 * (its `LockWaiterQueued`), then is parked here — holding no actor turn —
 * until the lock's projected state says it may take the lock. A lock with
 * parked requests is looked at once per fold of its events (from any
 * instance) and by one timer at the instants the pure queue arithmetic says
 * something may change by time alone (lease expiry, the head's window end);
 * a look wakes only the request whose place is the head, those whose places
 * lapsed (they are before the head) and those whose own give-up instant
 * came, each found in an index (./parked-waiters.ts), so an event costs
 * log n of the queue's length, not n. A woken request takes a `claim` turn,
 * which decides from the same state and appends its `LockAcquired`. Every
 * wait is bounded by the request's `waitMs` (on the clock, and on the timer
 * clock in case the clock jumps back), plus one request timeout for the
 * last turn. Under sessions the lock's state is read with its
 * sessions' ends; a session's close wakes the requests parked under it and
 * looks at the locks it held (free now) and those whose queues have waiters
 * under sessions, not at every lock with parked requests.
 */
import type { Logger } from "pino";
import type { ActorRuntime, Arrival } from "../actors/actor-runtime.ts";
import type { Clock } from "../actors/clock.ts";
import { unavailable, type TurnResult } from "../actors/actor-runtime.ts";
import type { KindProjection } from "../projections/kind-projection.ts";
import type { LockState } from "./state.ts";
import { livePlace, nextQueueChangeAt, queueAt, refersToSessions } from "./state.ts";
import { resolveSessions } from "./session-waiters.ts";
import { sessionEndMs } from "../session/index.ts";
import type { AcquireLock, ClaimLock } from "./commands.ts";
import { isWaitingReply } from "./logic.ts";
import { LockTurns } from "./endpoints.ts";
import { ParkedWaiters, type Parked } from "./parked-waiters.ts";

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
  /** A lock with parked requests is looked at least this often, whatever it was told (default 1000 ms). */
  readonly recheckMs?: number;
  /** Counts the parked requests and index entries each look reads (for tests of its cost). */
  readonly count?: (reads: number) => void;
  /**
   * Waiting acquires this instance holds at most, joining or parked, across
   * all locks (`--max-waiting-acquires`; default no bound): each holds memory
   * until it ends, and `--max-waiters` bounds only one lock's queue.
   */
  readonly maxWaiting?: number;
  /** Of those, what one client (see {@link Arrival.client}) holds at most (default no bound; {@link clientShareOfWaiting}). */
  readonly maxWaitingPerClient?: number;
}

/** What a waiting acquire asks for. */
export interface WaitingAcquire {
  readonly owner: string;
  readonly ttlMs?: number | undefined;
  readonly waitMs: number;
  readonly requestId?: string | undefined;
  readonly session?: string | undefined;
}

/** A parked request's terms. */
export interface Waiting {
  readonly owner: string;
  readonly session: string | undefined;
  readonly ttlMs: number | undefined;
  readonly requestId: string | undefined;
  /** Who asked, and whether as an operator: the grant its claim makes is theirs (a lease bound to nobody was anyone's). */
  readonly principal: string | undefined;
  readonly operator: boolean | undefined;
  readonly place: number;
  /** When the request stops waiting, on the clock and on the timer clock. */
  readonly giveUpAt: number;
  readonly giveUpMono: number;
  readonly waitingSince: number;
}

/** Parks waiting lock acquires and wakes them when their lock may have become theirs. */
export class LockWaiters {
  /** The parked requests of each lock that has some. */
  private readonly locks = new Map<string, ParkedWaiters>();
  /** Parked requests by the session they wait under (its close ends their places). */
  private readonly bySession = new Map<string, Set<Parked>>();
  private readonly monotonic: () => number;
  private readonly recheckMs: number;
  private readonly turns: LockTurns;
  private parkedCount = 0;
  /** Locks with parked requests here whose state, at their last look, had a lease or waiters under a session. */
  private readonly sessionQueues = new Set<string>();
  /** Waiting acquires in progress (joining the queue or parked), against {@link LockWaitersOptions.maxWaiting}. */
  private waitingCount = 0;
  /** The same, by client, for those whose client is known. */
  private readonly waitingByClient = new Map<string, number>();
  private stopping = false;
  /** Unregisters the fold listener that rouses parked requests; set only while some lock has them. */
  private stopWatching: (() => void) | undefined;

  constructor(private readonly options: LockWaitersOptions) {
    this.monotonic = options.monotonic ?? (() => performance.now());
    this.recheckMs = options.recheckMs ?? 1000;
    this.turns = options.turns ?? new LockTurns(options.runtime, options.projection);
    const sessions = this.turns.sessions;
    sessions?.onClose((id) => {
      for (const p of this.bySession.get(id) ?? []) p.rouse();
      // A lock the session held is free, and a queue with waiters under sessions may have lost its head: its next
      // may be parked here. Only those are looked at: a look at every lock with parked requests per close let a
      // client that opened and closed sessions slow every lock by the number of locks with waiters.
      for (const name of sessions.locksOf(id)) this.locks.get(name)?.lookSoon();
      for (const name of this.sessionQueues) this.locks.get(name)?.lookSoon();
    });
  }

  /** Requests parked right now. */
  get size(): number {
    return this.parkedCount;
  }

  /**
   * Runs an acquire that may wait: answers the lease, LEASE_EXISTS (with
   * `waitedMs` once it waited), another refusal, or UNAVAILABLE; within
   * `waitMs` plus the request timeout.
   */
  async acquire(name: string, request: WaitingAcquire, arrival: Arrival = {}): Promise<TurnResult> {
    const { maxWaiting = Infinity, maxWaitingPerClient = Infinity } = this.options;
    if (this.waitingCount >= maxWaiting) return tooManyWaitingAcquires(this.waitingCount, maxWaiting);
    const { client } = arrival;
    const ofClient = client === undefined ? 0 : (this.waitingByClient.get(client) ?? 0);
    if (ofClient >= maxWaitingPerClient) return tooManyOfOneClient(ofClient, maxWaitingPerClient);
    this.waitingCount++;
    if (client !== undefined) this.waitingByClient.set(client, ofClient + 1);
    try {
      return await this.joinAndWait(name, request, arrival);
    } finally {
      this.waitingCount--;
      if (client !== undefined) {
        const left = this.waitingByClient.get(client)! - 1;
        if (left === 0) this.waitingByClient.delete(client);
        else this.waitingByClient.set(client, left);
      }
    }
  }

  private async joinAndWait(name: string, request: WaitingAcquire, arrival: Arrival): Promise<TurnResult> {
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
    const w: Waiting = {
      owner: request.owner,
      session: request.session,
      ttlMs: request.ttlMs,
      requestId: request.requestId,
      principal: arrival.principal,
      operator: arrival.operator,
      place: joined.reply.waiting.place,
      giveUpAt: waitingSince + request.waitMs,
      giveUpMono: startedMono + request.waitMs,
      waitingSince,
    };
    const parked = this.enter(name, w);
    arrival.onWait?.();
    try {
      return await this.wait(name, parked);
    } finally {
      this.leave(name, parked);
    }
  }

  /** Answers every parked request UNAVAILABLE (the instance is stopping); their places lapse by themselves. */
  stop(): void {
    if (!this.stopping && this.size > 0)
      this.options.logger.info({ parked: this.size }, "answering parked lock acquires UNAVAILABLE: the instance is stopping");
    this.stopping = true;
    for (const lock of this.locks.values()) lock.rouseAll();
  }

  private async wait(name: string, parked: Parked): Promise<TurnResult> {
    const { clock, projection } = this.options;
    const w = parked.waiting;
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
        const result = await this.turns.execute(name, claim, { requestId: w.requestId, principal: w.principal, operator: w.operator });
        if (!result.ok || !isWaitingReply(result.reply)) return result;
      }
      // A fold that came while this request looked or claimed is looked at again at once.
      if (projection.record(name).seq !== seen) continue;
      await this.locks.get(name)!.park(parked, now);
    }
  }

  /** Registers a waiting request with its lock (and its session). */
  private enter(name: string, w: Waiting): Parked {
    let lock = this.locks.get(name);
    if (lock === undefined) {
      lock = new ParkedWaiters({
        look: (now) => this.look(name, now),
        clock: this.options.clock,
        monotonic: this.monotonic,
        recheckMs: this.recheckMs,
        dueAt: (p) => Math.min(p.waiting.giveUpAt, this.sessionEndOf(p.waiting)),
        count: this.options.count,
      });
      this.locks.set(name, lock);
      // A lock's fold rouses its parked requests; with none parked anywhere, folds run nothing here.
      this.stopWatching ??= this.options.projection.onFold((folded) => this.locks.get(folded)?.lookSoon());
    }
    const parked = lock.add(w);
    this.parkedCount++;
    if (w.session !== undefined) {
      let set = this.bySession.get(w.session);
      if (set === undefined) this.bySession.set(w.session, (set = new Set()));
      set.add(parked);
    }
    return parked;
  }

  private leave(name: string, parked: Parked): void {
    const lock = this.locks.get(name)!;
    lock.remove(parked);
    this.parkedCount--;
    if (lock.size === 0) {
      lock.close();
      this.locks.delete(name);
      this.sessionQueues.delete(name);
      if (this.locks.size === 0) {
        this.stopWatching?.();
        this.stopWatching = undefined;
      }
    }
    const session = parked.waiting.session;
    if (session === undefined) return;
    const set = this.bySession.get(session);
    set?.delete(parked);
    if (set?.size === 0) this.bySession.delete(session);
  }

  /** What a look at the lock needs at `now`: its head's place, whether it may claim, and when the queue next changes by time. */
  private look(name: string, now: number): { headPlace: number | null; headMayClaim: boolean; nextChangeAt: number } {
    if (refersToSessions(this.options.projection.get(name))) this.sessionQueues.add(name);
    else this.sessionQueues.delete(name);
    const state = this.stateOf(name, now);
    const view = queueAt(state, now);
    return { headPlace: view.head?.seq ?? null, headMayClaim: view.headMayClaim, nextChangeAt: nextQueueChangeAt(state, now) };
  }

  /** The lock's projected state, read with its sessions' ends as they stand (src/lock/session-waiters.ts). */
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
    if (queue.head?.seq === place) return queue.headMayClaim;
    return livePlace(state, now, place) === undefined;
  }
}

/**
 * The waiting acquires one client may hold on an instance that holds at
 * most `maxWaiting`, so that no client's waiting shuts the others out: a
 * tenth of them, but never fewer than one lock's queue may hold
 * (`maxWaiters`), so that one client may always fill one queue as the
 * contract lets it.
 */
export function clientShareOfWaiting(maxWaiting: number, maxWaiters: number): number {
  return Math.min(maxWaiting, Math.max(maxWaiters, Math.floor(maxWaiting / 10)));
}

/** TOO_MANY_WAITERS for one client's share of the instance's waiting acquires (nothing joined, nothing appended). */
function tooManyOfOneClient(waiting: number, share: number): TurnResult {
  const message = `this client holds ${waiting} waiting acquires on this instance, its share (--max-waiting-acquires / 10, at least --max-waiters)`;
  return { ok: false, rejection: { code: "TOO_MANY_WAITERS", message, details: { waiters: waiting, maxWaiters: share } } };
}

/** TOO_MANY_WAITERS for the instance's bound on waiting acquires (nothing joined, nothing appended). */
function tooManyWaitingAcquires(waiting: number, maxWaiting: number): TurnResult {
  const message = `this instance holds ${waiting} waiting acquires, its maximum (--max-waiting-acquires ${maxWaiting})`;
  return { ok: false, rejection: { code: "TOO_MANY_WAITERS", message, details: { waiters: waiting, maxWaiters: maxWaiting } } };
}
