/**
 * The actor runtime of one service instance. Each registered kind gets a
 * projection (one stream follower) that holds every actor's state; an actor
 * is a mailbox per id (commands decided in arrival order, one at a time)
 * over the state its kind's projection holds, and exists only while it has
 * commands, so memory follows live state, not traffic. A command's turn is
 * plain bounded code (src/actors/actor-runtime.ts) around the kind's pure
 * logic: no interpreter, invoked actor or timer per request.
 */
import type { Logger } from "pino";
import { nuid } from "@nats-io/nats-core";
import { encodeEvent, type EventEnvelope, type RecordedEvent, requestMsgId, msgIdVariant } from "../events/envelope.ts";
import { type AppendResult, type EventLog, LogUnavailableError, WrongLastSequenceError } from "../events/event-log.ts";
import type { ActorKind, Subjects } from "../contract/subjects.ts";
import { KindProjection, type BacklogWorker } from "../projections/kind-projection.ts";
import type { ProjectionRecord } from "../projections/kind-fold.ts";
import type { ProjectionSnapshotStore } from "../projections/snapshot-stores.ts";
import type { KindLogic, Command, Decision } from "./kind-logic.ts";
import type { Clock } from "./clock.ts";
import { forbidden, type Rejection } from "../contract/errors.ts";
import { actsFor } from "../contract/operators.ts";

/** What the runtime reports as it works (metrics hook in here). */
export interface RuntimeObserver {
  /** An append finished (acknowledged, refused or timed out) after `seconds`. */
  appendFinished(seconds: number, outcome: "ok" | "conflict" | "failed"): void;
}

/** Settings of the actor runtime. */
export interface ActorRuntimeOptions {
  readonly log: EventLog;
  readonly subjects: Subjects;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How long a `requestId` is remembered (the dedup window). */
  readonly dedupWindowMs: number;
  /** Decisions per command before giving up under contention (default 32). */
  readonly maxAttempts?: number;
  /** Message ids for commands without a `requestId` (default: NUID). */
  readonly newMsgId?: () => string;
  /** Where projection snapshots are kept; without one every start folds the whole stream. */
  readonly snapshots?: ProjectionSnapshotStore;
  /** Save a projection snapshot after this many events (default 10,000). */
  readonly snapshotEvery?: number;
  /**
   * The worker that folds a start's long backlog when there is no snapshot
   * (its module builds the kinds' logic from `settings`, as the service
   * did); without it, every start folds on this thread.
   */
  readonly backlogWorker?: BacklogWorker;
  /** How long a command may take from arrival to answer before it is answered UNAVAILABLE (default 3000 ms). */
  readonly requestTimeoutMs?: number;
  /** Deadline of each look at the stream by a projection (default 5000 ms). */
  readonly opTimeoutMs?: number;
  /** The timer clock deadlines are measured on (default performance.now). */
  readonly monotonic?: () => number;
  readonly observer?: RuntimeObserver;
}

/** How a command arrived, beyond its content. */
export interface Arrival {
  /** The request's idempotency key: a repeat within the dedup window gets the first answer. */
  readonly requestId?: string | undefined;
  /**
   * Durable commands: when the command was first sent (epoch ms); a reply
   * remembered for its `requestId` at or after that instant answers it,
   * however long ago.
   */
  readonly requestedAt?: number | undefined;
  /** What tells this request from another that reuses its `requestId` (src/transport/endpoint.ts). */
  readonly fingerprint?: string | undefined;
  /** Who sent it, as NATS says (`""`: unknown). */
  readonly principal?: string | undefined;
  /** Whether that principal is an operator (it may act on any holder's lease). */
  readonly operator?: boolean | undefined;
  /**
   * Whom per-client bounds count the request against: the principal, else
   * the connection its reply inbox belongs to (src/transport/micro-service.ts,
   * `clientOf`); absent on durable commands.
   */
  readonly client?: string | undefined;
  /**
   * When the request must be answered, on the runtime's timer clock (see
   * {@link ActorRuntime.deadlineFor}); default: the request timeout from now.
   * A command that spans turns passes one deadline to all of them.
   */
  readonly deadline?: number | undefined;
  /**
   * Told when the request stops working and starts waiting (a blocking
   * acquire parked in its queue): its place among the requests being served
   * goes to the next (src/transport/micro-service.ts, fair admission).
   */
  readonly onWait?: (() => void) | undefined;
}

/** The map key of an actor (NUL cannot occur in a kind). */
const actorKey = (kind: ActorKind, id: string): string => `${kind}\u0000${id}`;

/** One command in an actor's mailbox, and how to answer it. */
interface Job {
  readonly pending: PendingCommand;
  readonly resolve: (result: TurnResult) => void;
}

/** An actor while it has commands: those waiting for their turn, in arrival order. */
interface Mailbox {
  readonly jobs: Job[];
}

interface KindRuntime {
  readonly logic: KindLogic<unknown, Command>;
  readonly projection: KindProjection<unknown>;
  readonly ports: TurnPorts;
}

/** Runs every actor of every registered kind on this instance. */
export class ActorRuntime {
  private readonly kinds = new Map<ActorKind, KindRuntime>();
  private readonly mailboxes = new Map<string, Mailbox>();
  private readonly deadlines: TurnDeadlines;
  /** Copies of ids shared by a kind's actors this instance sent, and where they may still land (for a retry's duplicate at sequence 0). */
  private readonly idsInDoubt: IdsInDoubt;
  private readonly maxAttempts: number;
  private readonly requestTimeoutMs: number;
  private readonly newMsgId: () => string;
  private readonly monotonic: () => number;
  private inFlight = 0;
  /**
   * The requests with a requestId whose turns are running here, by requestId:
   * another request with that id arriving meanwhile is refused at once (the
   * event that would tell it, and so the projections, comes only after).
   */
  private readonly requestsRunning = new Map<string, { readonly fingerprint: string; turns: number }>();
  private idleWaiters: (() => void)[] = [];
  private stopping = false;

  constructor(private readonly options: ActorRuntimeOptions) {
    this.maxAttempts = options.maxAttempts ?? 32;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 3000;
    this.newMsgId = options.newMsgId ?? (() => nuid.next());
    this.monotonic = options.monotonic ?? (() => performance.now());
    this.deadlines = new TurnDeadlines({ monotonic: this.monotonic });
    this.idsInDoubt = new IdsInDoubt(options.dedupWindowMs);
  }

  /** Makes a kind of actor available and returns its projection (start it before serving). */
  register<S, C extends Command, E extends EventEnvelope>(logic: KindLogic<S, C, E>): KindProjection<S> {
    const { log, subjects, logger, backlogWorker } = this.options;
    const erased = logic as unknown as KindLogic<unknown, Command>;
    const projection = new KindProjection<unknown>({
      log,
      filter: subjects.eventsOfKind(logic.kind),
      fold: erased,
      logger,
      snapshots: this.options.snapshots,
      snapshotEvery: this.options.snapshotEvery,
      opTimeoutMs: this.options.opTimeoutMs,
      readTimeoutMs: this.requestTimeoutMs,
      replies: { horizonMs: 2 * this.options.dedupWindowMs },
      backlogWorker,
    });
    const ports = this.portsFor(logic.kind, erased, projection);
    this.kinds.set(logic.kind, { logic: erased, projection, ports });
    return projection as KindProjection<S>;
  }

  /** The projection of a registered kind. */
  projection<S>(kind: ActorKind): KindProjection<S> {
    return this.kindRuntime(kind).projection as KindProjection<S>;
  }

  /** Every registered kind's projection. */
  projections(): KindProjection<unknown>[] {
    return [...this.kinds.values()].map((k) => k.projection);
  }

  /**
   * Runs one command through the actor `kind`/`id`; resolves with its reply,
   * refusal or UNAVAILABLE, within the request timeout. The command enters
   * the actor's mailbox before this returns, so commands given in order are
   * decided in order.
   */
  execute<C extends Command>(kind: ActorKind, id: string, command: C, arrival: Arrival = {}): Promise<TurnResult> {
    const { requestId, requestedAt, fingerprint, principal, operator } = arrival;
    if (this.stopping) return Promise.resolve(unavailable("the service instance is stopping", 100));
    if (requestId !== undefined && fingerprint !== undefined && !this.running(requestId, fingerprint))
      return Promise.resolve(reused(requestId));
    const runtime = this.kindRuntime(kind);
    const key = actorKey(kind, id);
    const pending: PendingCommand = {
      command,
      requestId,
      requestedAt,
      fingerprint,
      principal,
      operator,
      // The op is part of the id so a requestId reused for another operation is not mistaken for a repeat.
      msgId:
        requestId === undefined ? this.newMsgId() : requestMsgId(this.msgIdScope(kind, id, command), command.op, requestId, fingerprint),
      deadline: arrival.deadline ?? this.monotonic() + this.requestTimeoutMs,
      msgIdSharedByKind: requestId !== undefined && sharesMsgIdAcrossIds(kind, command),
    };
    this.inFlight++;
    return new Promise<TurnResult>((resolve) => {
      const job: Job = { pending, resolve };
      const mailbox = this.mailboxes.get(key);
      if (mailbox !== undefined) {
        mailbox.jobs.push(job);
        return;
      }
      const fresh: Mailbox = { jobs: [job] };
      this.mailboxes.set(key, fresh);
      void this.serve(key, kind, id, runtime, fresh);
    });
  }

  /** Takes the mailbox's commands one at a time, in arrival order, until it is empty; then the actor is gone. */
  private async serve(key: string, kind: ActorKind, id: string, runtime: KindRuntime, mailbox: Mailbox): Promise<void> {
    for (let job = mailbox.jobs[0]; job !== undefined; job = mailbox.jobs[0]) {
      const result = await this.bounded(runtime.ports, id, job.pending);
      job.resolve(result);
      this.finished(kind, id, job.pending, result);
      mailbox.jobs.shift();
    }
    this.mailboxes.delete(key);
  }

  /** Notes a turn of `requestId` as running; false when a turn of another request with that id runs (it is refused). */
  private running(requestId: string, fingerprint: string): boolean {
    const running = this.requestsRunning.get(requestId);
    if (running === undefined) this.requestsRunning.set(requestId, { fingerprint, turns: 1 });
    else if (running.fingerprint !== fingerprint) return false;
    else running.turns++;
    return true;
  }

  /** A command answered: logged when it was UNAVAILABLE or left in doubt, and no longer in flight. */
  private finished(kind: ActorKind, id: string, pending: PendingCommand, result: TurnResult): void {
    const running = pending.requestId === undefined ? undefined : this.requestsRunning.get(pending.requestId);
    if (running !== undefined && running.fingerprint === pending.fingerprint && --running.turns === 0)
      this.requestsRunning.delete(pending.requestId!);
    if (!result.ok && isUnavailable(result)) {
      const inDoubt = result.unavailable?.inDoubt === true;
      this.options.logger.debug(
        { kind, id, op: pending.command.op, requestId: pending.requestId, cause: result.rejection.message },
        inDoubt ? "turn left in doubt" : "turn answered UNAVAILABLE",
      );
    }
    this.inFlight--;
    if (this.inFlight === 0) this.notifyIdle();
  }

  /** One turn, answered by itself or, past its deadline, by the runtime's deadline sweep (whichever comes first). */
  private bounded(ports: TurnPorts, id: string, pending: PendingCommand): Promise<TurnResult> {
    return new Promise<TurnResult>((resolve) => {
      let answered = false;
      const doubt = new AppendDoubt();
      const turn = {
        deadline: pending.deadline,
        expire: () => {
          if (answered) return;
          answered = true;
          resolve(timedOut(doubt));
        },
      };
      this.deadlines.add(turn);
      void runTurn(ports, id, pending, doubt).then((result) => {
        this.deadlines.done(turn);
        if (answered) return;
        answered = true;
        resolve(result);
      });
    });
  }

  /**
   * An id where a command of `kind` with `requestId` sent by this instance
   * may still be stored (`IdsInDoubt`): a retry should go there first.
   */
  inDoubtOn(kind: ActorKind, command: Command, requestId: string, fingerprint?: string): string | undefined {
    // Nearly always none is in doubt: then no id is built on the request path.
    if (this.idsInDoubt.size === 0 || !sharesMsgIdAcrossIds(kind, command)) return undefined;
    return this.idsInDoubt.on(requestMsgId(this.msgIdScope(kind, "", command), command.op, requestId, fingerprint), this.monotonic());
  }

  /**
   * Whether `requestId` was taken, at or after `since`, by a request other
   * than the one `fingerprint` names (another op, body or principal), on any
   * kind: such a request is refused `REQUEST_ID_REUSED`.
   */
  requestIdReused(requestId: string, fingerprint: string | undefined, since: number): boolean {
    if (fingerprint === undefined) return false;
    for (const { projection } of this.kinds.values()) {
      const taken = projection.requestOf(requestId);
      if (taken !== undefined && taken.atMs >= since && taken.fingerprint !== fingerprint) return true;
    }
    return false;
  }

  /** `arrival` with its deadline set: the one it has, or the request timeout from now (a command's arrival). */
  deadlineFor(arrival: Arrival): Arrival & { readonly deadline: number } {
    const deadline = arrival.deadline ?? this.monotonic() + this.requestTimeoutMs;
    return { ...arrival, deadline };
  }

  /** Milliseconds left before `deadline` (0 once it passed). */
  remainingMs(deadline: number): number {
    return Math.max(0, deadline - this.monotonic());
  }

  /** The folded state of an actor (for inspection, not for decisions). */
  peek<S>(kind: ActorKind, id: string): S | undefined {
    return this.kinds.get(kind)?.projection.get(id) as S | undefined;
  }

  /** Resolves once no command is in flight, or after `timeoutMs` (then with how many were left). */
  drain(timeoutMs = 10_000): Promise<number> {
    if (this.inFlight === 0) return Promise.resolve(0);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.inFlight), timeoutMs);
      timer.unref();
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(0);
      });
    });
  }

  /** Refuses new commands (UNAVAILABLE) and waits (bounded) for those in flight; resolves with how many were left. */
  async stop(timeoutMs = 10_000): Promise<number> {
    this.stopping = true;
    return this.drain(timeoutMs);
  }

  /** How many actors are in memory (those with commands to carry out). */
  get activeActors(): number {
    return this.mailboxes.size;
  }

  /** Actors in memory by kind. */
  activeByKind(): Record<ActorKind, number> {
    const counts: Record<ActorKind, number> = { lock: 0, proxy: 0, route: 0, host: 0, session: 0 };
    for (const key of this.mailboxes.keys()) counts[key.slice(0, key.indexOf("\u0000")) as ActorKind]++;
    return counts;
  }

  /** Commands in flight. */
  get busy(): number {
    return this.inFlight;
  }

  /**
   * What a request's message id is scoped to: the actor's subject, except for
   * a proxy grant, which is one acquisition whichever proxy records it — two
   * instances (a repeat delivered to another one) may ask different proxies,
   * and the stream-wide duplicate window must keep one grant per requestId.
   */
  private msgIdScope(kind: ActorKind, id: string, command: Command): string {
    const { subjects } = this.options;
    return sharesMsgIdAcrossIds(kind, command) ? subjects.eventsOfKind(kind) : subjects.event(kind, id);
  }

  private kindRuntime(kind: ActorKind): KindRuntime {
    const runtime = this.kinds.get(kind);
    if (runtime === undefined) throw new Error(`no actor logic registered for kind ${kind}`);
    return runtime;
  }

  private notifyIdle(): void {
    for (const w of this.idleWaiters.splice(0)) w();
  }

  private portsFor(kind: ActorKind, logic: KindLogic<unknown, Command>, projection: KindProjection<unknown>): TurnPorts {
    const { clock, dedupWindowMs, subjects } = this.options;
    return {
      now: () => clock.now(),
      monotonic: this.monotonic,
      record: (id) => projection.record(id),
      requestIdReused: (requestId, fingerprint, since) => this.requestIdReused(requestId, fingerprint, since),
      remembered: (msgId, since) => {
        const r = projection.remembered(msgId);
        return r !== undefined && r.atMs >= since ? r : undefined;
      },
      answersRepeat: (reply, command) => logic.answersRepeat?.(reply, command) ?? true,
      // The kind's own decide, bound rather than wrapped: the turn reaches the logic in one hop.
      decide: logic.decide.bind(logic),
      holderOf: (state, command, now) => logic.holderOf?.(state, command, now),
      encode: (id, decision, now, requestId, by) => encode(kind, id, decision, now, requestId, by),
      applyOwn: (id, base: ProjectionRecord<unknown>, event: EncodedEvent, seq, msgId) => {
        const recorded: RecordedEvent = { seq, event: event.envelope, msgId };
        const stateAfter = logic.evolve(base.state, recorded);
        const reply = logic.replyFor(stateAfter, recorded);
        projection.applyOwn(id, recorded, stateAfter, event.atMs, reply);
        return reply;
      },
      copyOpened: (msgId, id) => this.idsInDoubt.opened(msgId, id, this.monotonic()),
      copyClosed: (msgId, id, outcome) => this.idsInDoubt.closed(msgId, id, outcome, this.monotonic()),
      openCopyElsewhere: (msgId, id) => this.idsInDoubt.on(msgId, this.monotonic(), id),
      replyRecordedFor: (msgId) => projection.replyRecordedFor(msgId) ?? projection.remembered(msgId),
      watch: (msgId) => projection.watch(msgId),
      unwatch: (msgId) => projection.unwatch(msgId),
      append: (input) => this.append(kind, input),
      verify: (id, timeoutMs) => projection.freshSubject(subjects.event(kind, id), timeoutMs),
      catchUp: (id, seq, timeoutMs) => projection.reached(seq, timeoutMs),
      dedupWindowMs,
      maxAttempts: this.maxAttempts,
    };
  }

  private async append(kind: ActorKind, input: AppendInput): Promise<AppendResult> {
    const { observer } = this.options;
    // The clock is read only for the metrics that want it (two reads per append showed in the lock path's profile).
    const started = observer === undefined ? 0 : this.monotonic();
    const subject = this.options.subjects.event(kind, input.id);
    try {
      const ack = await this.options.log.append(subject, input.event.payload, {
        expectedLastSubjectSeq: input.expectedSeq,
        msgId: input.msgId,
        timeoutMs: Math.max(1, input.timeoutMs),
      });
      observer?.appendFinished((this.monotonic() - started) / 1000, "ok");
      return ack;
    } catch (e) {
      const conflict = (e as Error).name === "WrongLastSequenceError";
      observer?.appendFinished((this.monotonic() - started) / 1000, conflict ? "conflict" : "failed");
      const fields = { kind, id: input.id, op: input.op, requestId: input.requestId };
      if (conflict) this.options.logger.debug(fields, "append conflicted; catching up");
      else this.options.logger.debug({ ...fields, err: e }, "append failed");
      throw e;
    }
  }
}

/** The envelope and bytes of the event a decision records. */
function encode(
  kind: ActorKind,
  id: string,
  decision: Decision,
  now: number,
  requestId: string | undefined,
  by: string | undefined,
): EncodedEvent {
  if (decision.outcome !== "append") throw new Error("encode of a decision that records nothing");
  const { type, data } = decision;
  const at = new Date(now).toISOString();
  const principal = by === undefined || by === "" ? undefined : by;
  // One literal per shape, keys in the envelope's order: no spread of a throwaway object per event.
  const envelope: EventEnvelope =
    requestId === undefined
      ? principal === undefined
        ? { type, v: 1, at, kind, id, data }
        : { type, v: 1, at, kind, id, by: principal, data }
      : principal === undefined
        ? { type, v: 1, at, kind, id, requestId, data }
        : { type, v: 1, at, kind, id, requestId, by: principal, data };
  return { envelope, payload: encodeEvent(envelope), atMs: now };
}

/** A proxy grant's message id is the kind's, not the proxy's: one requestId is one grant, whichever proxy takes it. */
function sharesMsgIdAcrossIds(kind: ActorKind, command: Command): boolean {
  return kind === "proxy" && command.op === "grant";
}

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

/*
 * The copies of message ids shared by a kind's actors (a proxy grant's) that
 * this instance sent: on which actors a copy may still land (its turn is
 * still running, or ended without knowing whether it was stored), and which
 * ids the stream took a copy of from it. A retry that meets JetStream's "duplicate at sequence
 * 0" for such an id may append under a variant only where no other copy can
 * land beside it: on the actor its own copies went to, where the expected
 * subject sequence lets at most one of them be stored, and only when the
 * copy the stream holds is one of this instance's. A copy left on another
 * actor, or one this instance never sent (another instance's, in flight or
 * held by a leader), could be stored too: two grants of one request.
 * Remembered for JetStream's duplicate window, bounded in count; forgetting
 * only makes a retry wait in doubt.
 */
export class IdsInDoubt {
  /** msgId → per actor, the turns still sending copies there and until when a copy left in doubt there may land (timer clock). */
  private readonly open = new Map<string, Map<string, { turns: number; doubtUntil: number }>>();
  /** msgId → until when a copy the stream took counts as this instance's (timer clock), in the order last taken. */
  private readonly sent = new Map<string, number>();

  constructor(
    private readonly windowMs: number,
    private readonly maxIds = 10_000,
  ) {}

  /** A turn on actor `id` is about to send its first copy of `msgId` at `now`; whether the stream took one from this instance before. */
  opened(msgId: string, id: string, now: number): boolean {
    const before = this.sentHere(msgId, now);
    const actors = this.open.get(msgId) ?? new Map<string, { turns: number; doubtUntil: number }>();
    const entry = actors.get(id);
    actors.set(id, { turns: (entry?.turns ?? 0) + 1, doubtUntil: entry?.doubtUntil ?? 0 });
    this.open.delete(msgId);
    this.open.set(msgId, actors);
    this.forget(now);
    return before;
  }

  /**
   * That turn ended at `now`. `taken`: the stream may have taken a copy it
   * sent (stored it, refused it by its expected sequence, or left the writer
   * without an answer), not only called it a duplicate; `inDoubt`: such a
   * copy may still be stored on `id` within the window.
   */
  closed(msgId: string, id: string, outcome: { readonly taken: boolean; readonly inDoubt: boolean }, now: number): void {
    if (outcome.taken) {
      this.sent.delete(msgId);
      this.sent.set(msgId, now + this.windowMs);
    }
    const inDoubt = outcome.taken && outcome.inDoubt;
    const actors = this.open.get(msgId);
    const entry = actors?.get(id);
    if (actors === undefined || entry === undefined) return;
    const doubtUntil = inDoubt ? now + this.windowMs : entry.doubtUntil;
    if (entry.turns <= 1 && doubtUntil <= now) actors.delete(id);
    else actors.set(id, { turns: entry.turns - 1, doubtUntil });
    if (actors.size === 0) this.open.delete(msgId);
  }

  /** An actor other than `except` where a copy of `msgId` this instance sent may still land at `now`. */
  on(msgId: string, now: number, except?: string): string | undefined {
    for (const [id, { turns, doubtUntil }] of this.open.get(msgId) ?? []) {
      if (id !== except && (turns > 0 || doubtUntil > now)) return id;
    }
    return undefined;
  }

  /** Whether the stream took a copy of `msgId` from this instance within the window before `now`. */
  sentHere(msgId: string, now: number): boolean {
    return (this.sent.get(msgId) ?? 0) > now;
  }

  /** How many ids have a copy that may still land (0: nothing to look up). */
  get size(): number {
    return this.open.size;
  }

  private forget(now: number): void {
    for (const [msgId, until] of this.sent) {
      if (until > now && this.sent.size <= this.maxIds) break;
      this.sent.delete(msgId);
    }
    for (const [msgId, actors] of this.open) {
      for (const [id, { turns, doubtUntil }] of actors) if (turns === 0 && doubtUntil <= now) actors.delete(id);
      if (actors.size === 0) this.open.delete(msgId);
      else if (this.open.size <= this.maxIds) break;
      else this.open.delete(msgId);
    }
  }
}

/*
 * One command's turn on one actor, as plain bounded code: the I/O protocol
 * around the kind's pure logic. The actor's state is not here but in its
 * kind's projection, read at each decision.
 *
 *   decide ─ append ──► appending ─ acked ──────────────────────► reply
 *     │ ▲                  │ conflict / duplicate / lost ack twice
 *     │ └──── catching up ◄┘ (wait until the projection passed it)
 *     └─ reply or refusal ─► verifying ─ nothing newer ──► answer
 *                                       └ something newer ─► decide
 *
 * Every step is given the time the command has left; the runtime bounds the
 * turn as a whole as well (src/actors/actor-runtime.ts), so a step that
 * ignores its own deadline cannot hold the answer. A turn that gives up
 * while an append of its own may still be stored answers "in doubt", never
 * the contract's "nothing was changed" (src/actors/actor-runtime.ts). Lease expiry is never a
 * timer here: it is arithmetic on the decision's instant.
 */

/** One command waiting for, or taking, its turn. */
export interface PendingCommand {
  readonly command: Command;
  readonly requestId: string | undefined;
  /** When a durable command was first sent (epoch ms): a reply remembered since then answers it. */
  readonly requestedAt: number | undefined;
  /** `Nats-Msg-Id` of the event this command may append (stable across retries). */
  readonly msgId: string;
  /** What tells this request from another reusing its requestId. */
  readonly fingerprint?: string | undefined;
  /** Who sent it (`""`: unknown), and whether that principal is an operator. */
  readonly principal?: string | undefined;
  readonly operator?: boolean | undefined;
  /** The instant on the runtime's timer clock by which the command must be answered. */
  readonly deadline: number;
  /**
   * `msgId` is the same whichever id of the kind the command lands on (a
   * proxy grant: one requestId, one grant, whichever proxy takes it), so a
   * copy JetStream holds but has not stored may be on another actor's subject.
   */
  readonly msgIdSharedByKind?: boolean;
}

/** An event ready to append: its envelope and the exact bytes (a retry sends the same ones). */
export interface EncodedEvent {
  readonly envelope: EventEnvelope;
  readonly payload: Uint8Array;
  /** The envelope's `at` in epoch ms (the decision's instant, kept so the fold need not parse it back). */
  readonly atMs: number;
}

/** What the append step is given. */
export interface AppendInput {
  readonly id: string;
  readonly event: EncodedEvent;
  readonly expectedSeq: number;
  readonly msgId: string;
  /** The command's op and requestId, for the runtime's log lines. */
  readonly op: string;
  readonly requestId: string | undefined;
  readonly timeoutMs: number;
}

/** The effects and pure parts a turn uses, implemented by the runtime (faked in the turn's own tests). */
export interface TurnPorts {
  /** The decision clock (epoch ms): injected, simulated in tests. */
  now(): number;
  /** The timer clock deadlines are measured on (ms). */
  monotonic(): number;
  /** The id's record in its kind's projection. */
  record(id: string): ProjectionRecord<unknown>;
  /** A reply remembered for `msgId` at or after `since`, if any. */
  remembered(msgId: string, since: number): { reply: unknown } | undefined;
  /** Whether another request took `requestId` at or after `since` (see {@link ActorRuntime.requestIdReused}). */
  requestIdReused(requestId: string, fingerprint: string | undefined, since: number): boolean;
  /** Whether a remembered `reply` answers this repeat of `command` (the kind's `answersRepeat`; else it is decided again). */
  answersRepeat(reply: unknown, command: Command): boolean;
  decide(state: unknown, command: Command, now: number): Decision;
  /** The principal that created what a holder-bound command acts on (the kind's `holderOf`). */
  holderOf(state: unknown, command: Command, now: number): string | undefined;
  /** The event a decision records, stamped with the decision's instant and the request's principal. */
  encode(id: string, decision: Decision, now: number, requestId: string | undefined, by: string | undefined): EncodedEvent;
  /** Applies this turn's own acknowledged event to the projection and returns the reply it owes. */
  applyOwn(id: string, base: ProjectionRecord<unknown>, event: EncodedEvent, seq: number, msgId: string): unknown;
  /**
   * A turn on `id` sends its first copy of a shared `msgId`; whether the
   * stream took one from this instance before (`IdsInDoubt`).
   */
  copyOpened(msgId: string, id: string): boolean;
  /** That turn ended: whether the stream took a copy of it, and whether the turn ended in doubt. */
  copyClosed(msgId: string, id: string, outcome: { readonly taken: boolean; readonly inDoubt: boolean }): void;
  /** An actor other than `id` where a copy of the shared `msgId` this instance sent may still be stored. */
  openCopyElsewhere(msgId: string, id: string): string | undefined;
  /** Where this turn's own event was found in the stream (by any folder), with its reply. */
  replyRecordedFor(msgId: string): { reply: unknown } | undefined;
  watch(msgId: string): void;
  unwatch(msgId: string): void;
  /** Appends with the expected subject sequence and message id; bounded by `timeoutMs`. */
  append(input: AppendInput): Promise<AppendResult>;
  /** Resolves once the projection holds the last event on the actor's subject; rejects at `timeoutMs`. */
  verify(id: string, timeoutMs: number): Promise<void>;
  /** Resolves once the projection has folded stream sequence `seq`; rejects at `timeoutMs`. */
  catchUp(id: string, seq: number, timeoutMs: number): Promise<void>;
  /** How long a requestId is remembered (the dedup window). */
  readonly dedupWindowMs: number;
  /** Decisions per command before giving up under contention. */
  readonly maxAttempts: number;
}

/** The answer of a turn that ran out of time: in doubt while its own event may still be stored. */
export function timedOut(doubt: AppendDoubt): TurnResult {
  return doubt.open
    ? inDoubt("no answer from the event stream in time, and this command's event may still be stored", 1000)
    : unavailable("no answer from the event stream in time", 1000);
}

/**
 * Runs one command's turn on actor `id` to its answer. Never throws. `doubt`
 * is the turn's record of appends whose fate it does not know, shared with
 * the runtime's deadline sweep so that a turn answered by the sweep is not
 * told "nothing was changed" either.
 */
export function runTurn(ports: TurnPorts, id: string, pending: PendingCommand, doubt = new AppendDoubt()): Promise<TurnResult> {
  // Only a shared id's copies are told to the instance: every other turn runs as it is.
  if (pending.msgIdSharedByKind !== true) return decideAndAppend(ports, id, pending, doubt, undefined);
  const copies: Copies = { opened: false, taken: false };
  return decideAndAppend(ports, id, pending, doubt, copies).then((result) => {
    // A copy the stream took from this turn may still be stored only when the turn ends in doubt.
    if (copies.opened) ports.copyClosed(pending.msgId, id, { taken: copies.taken, inDoubt: isInDoubt(result) });
    return result;
  });
}

/** What a turn did with a shared id: whether it sent a copy, and whether the stream took one (not only called it a duplicate). */
interface Copies {
  opened: boolean;
  taken: boolean;
}

/** The turn itself; `copies` is given for a shared id, and records what became of its copies. */
async function decideAndAppend(
  ports: TurnPorts,
  id: string,
  pending: PendingCommand,
  doubt: AppendDoubt,
  copies: Copies | undefined,
): Promise<TurnResult> {
  const left = (): number => pending.deadline - ports.monotonic();
  if (left() <= 0) return unavailable("the request waited past its deadline for its turn", 0);
  let attempts = 0;
  let lostAcks = 0;
  let msgId = pending.msgId;
  let watching = false;
  // A shared id (`copies` given): whether the stream took a copy from this instance before this turn (else a
  // copy it holds but did not store, and no copy of this turn took, is another instance's).
  let takenBefore = false;
  try {
    for (;;) {
      if (left() <= 0) return timedOut(doubt);
      const base = ports.record(id);
      if (watching) {
        // Back from a wait after an append: the turn's own event may have been folded since (a lost ack, stored after all).
        const found = ports.replyRecordedFor(pending.msgId);
        if (found !== undefined) return { ok: true, reply: found.reply };
        doubt.settledUpTo(base.seq);
        if (attempts >= ports.maxAttempts) {
          return doubt.open
            ? inDoubt("the event stream did not acknowledge the append", 250)
            : unavailable(
                lostAcks > 0 ? "the event stream did not acknowledge the append" : `gave up after ${attempts} conflicting attempts`,
                250,
              );
        }
      }
      const now = Math.max(ports.now(), base.atMs);
      if (pending.requestId !== undefined) {
        // A durable command published again is the same request: the window runs back from when this copy was sent.
        const since = (pending.requestedAt ?? now) - ports.dedupWindowMs;
        if (ports.requestIdReused(pending.requestId, pending.fingerprint, since)) return reused(pending.requestId);
        const remembered = ports.remembered(pending.msgId, since);
        if (remembered !== undefined) {
          if (ports.answersRepeat(remembered.reply, pending.command)) return { ok: true, reply: remembered.reply };
          // The request's id is on the event that earned that reply, in JetStream's duplicate window: what this repeat appends goes under a variant.
          if (msgId === pending.msgId) msgId = msgIdVariant(pending.msgId, 0);
        }
      }
      const decision = holderCheck(ports, base.state, pending, now, ports.decide(base.state, pending.command, now));
      attempts++;
      if (decision.outcome !== "append") {
        // A reply or refusal is answered only once the projection is known to hold the subject's last event.
        try {
          await ports.verify(id, left());
        } catch (error) {
          return failed(error, left(), doubt);
        }
        if (ports.record(id).seq !== base.seq) continue;
        // Decided on the sequence a lost append of this turn expected: that append may still land and make this answer wrong.
        if (doubt.open) return inDoubt("an append of this command whose acknowledgement was lost may still be stored", 250);
        if (decision.outcome === "reject") return { ok: false, rejection: decision.rejection };
        return { ok: true, reply: decision.reply };
      }
      const event = ports.encode(id, decision, now, pending.requestId, pending.principal);
      if (!watching) {
        ports.watch(pending.msgId);
        watching = true;
      }
      let waitSeq = 0;
      let duplicate = false;
      for (;;) {
        if (copies !== undefined && !copies.opened) {
          takenBefore = ports.copyOpened(pending.msgId, id);
          copies.opened = true;
        }
        doubt.sent(base.seq);
        try {
          const ack = await ports.append({
            id,
            event,
            expectedSeq: base.seq,
            msgId,
            op: pending.command.op,
            requestId: pending.requestId,
            timeoutMs: Math.max(1, left()),
          });
          if (!ack.duplicate) {
            if (copies !== undefined) copies.taken = true;
            return { ok: true, reply: ports.applyOwn(id, base, event, ack.seq, msgId) };
          }
          // Our message id was stored already (a retry after a lost ack): find where, then answer from it.
          // At sequence 0 the leader holds it but has not stored it: a copy still in flight, or (nats-server 2.10 in a
          // cluster) one that was refused after the id was taken, which stays a duplicate for the stream's window.
          doubt.answered();
          if (ack.seq === 0) {
            if (copies !== undefined) {
              // A copy on another actor's subject, or another instance's anywhere: no expected sequence keeps a variant
              // here from landing beside it. A variant is safe only when the held copy is this instance's, on this actor.
              const elsewhere = ports.openCopyElsewhere(pending.msgId, id);
              if (elsewhere !== undefined) return inDoubt(`an event with this requestId may still be stored for ${elsewhere}`, 250);
              if (!takenBefore && !copies.taken)
                return inDoubt("an event with this requestId sent by another instance may still be stored", 250);
            }
            doubt.lost();
          }
          waitSeq = ack.seq;
          duplicate = true;
          break;
        } catch (error) {
          // Refused by its expected sequence or left without an answer: the stream may have taken the id.
          if (copies !== undefined)
            copies.taken ||= error instanceof WrongLastSequenceError || (error instanceof LogUnavailableError && error.ambiguous);
          // Someone else wrote: wait until the projection has their event, then decide again.
          if (error instanceof WrongLastSequenceError) {
            doubt.answered();
            waitSeq = error.actual ?? 0;
            break;
          }
          if (!(error instanceof LogUnavailableError && error.ambiguous)) {
            doubt.answered();
            return failed(error, left(), doubt);
          }
          doubt.lost();
          lostAcks++;
          if (left() <= 0) return timedOut(doubt);
          // The ack was lost: publish again with the same message id and expected
          // sequence. JetStream stores it at most once, so this settles the question.
          if (lostAcks === 1) continue;
          waitSeq = 0;
          break;
        }
      }
      try {
        await (waitSeq > 0 ? ports.catchUp(id, waitSeq, left()) : ports.verify(id, left()));
      } catch (error) {
        return failed(error, left(), doubt);
      }
      // The id is held by JetStream's duplicate window but no event carries it: try again under a variant.
      if (duplicate) msgId = msgIdVariant(pending.msgId, attempts);
    }
  } catch (error) {
    // A port that threw where it should not have (a bug below): the caller still gets an answer.
    return failed(error, left(), doubt);
  } finally {
    if (watching) ports.unwatch(pending.msgId);
  }
}

/** Refusals that come before a holder's FORBIDDEN in the contract's error order. */
const BEFORE_HOLDER = new Set(["UNAUTHENTICATED", "BAD_REQUEST", "REQUEST_ID_REUSED", "TTL_EXCEEDS_MAX", "FORBIDDEN", "CORRUPT"]);

/**
 * `decision`, or FORBIDDEN when the command is holder-bound and the lease or
 * session it acts on was created by another principal than the requester's,
 * who is no operator: first among the state checks, after the refusals
 * that precede it. A lease created without a principal binds nobody.
 */
function holderCheck(ports: TurnPorts, state: unknown, pending: PendingCommand, now: number, decision: Decision): Decision {
  if (pending.operator === true) return decision;
  if (decision.outcome === "reject" && BEFORE_HOLDER.has(decision.rejection.code)) return decision;
  const holder = ports.holderOf(state, pending.command, now);
  const principal = pending.principal ?? "";
  if (holder === undefined || holder === "" || actsFor(principal, holder)) return decision;
  return { outcome: "reject", rejection: forbidden(`it was created by ${holder}`, principal) };
}

/** The refusal of a request whose requestId another request took within the dedup window. */
export function reused(requestId: string): TurnResult {
  const message = `requestId ${JSON.stringify(requestId)} was used within the dedup window by another request (another op, body or principal)`;
  return { ok: false, rejection: { code: "REQUEST_ID_REUSED", message, details: { requestId } } };
}

/** The answer for a step that failed: out of time, or the stream could not be used. */
function failed(error: unknown, leftMs: number, doubt: AppendDoubt): TurnResult {
  if (leftMs <= 0) return timedOut(doubt);
  const cause = error instanceof Error ? error.message : String(error);
  return doubt.open ? inDoubt(cause, 250) : unavailable(cause, 250);
}

/*
 * How a turn ends: a reply, a contract refusal, or — retryable — the event
 * stream could not be used in time. The last one is told apart from a
 * refusal by `unavailable`, which carries how soon a retry makes sense; the
 * wire sees it as the contract's `UNAVAILABLE`, and the durable command
 * consumer naks with that delay. When the turn's own event may still be
 * stored, it is marked in doubt and a request gets no answer at all.
 */

/** Why a turn could not finish, and when to try again. */
export interface Unavailable {
  readonly cause: string;
  readonly retryAfterMs: number;
  /**
   * The turn's own event may still be stored (src/actors/actor-runtime.ts):
   * the contract's `UNAVAILABLE` ("nothing was changed") would not be true,
   * so a request gets no answer and its client's timeout stands for "not
   * known"; a retry with the same requestId learns the outcome.
   */
  readonly inDoubt?: true;
}

/** How a turn ended. */
export type TurnResult =
  | { readonly ok: true; readonly reply: unknown }
  | { readonly ok: false; readonly rejection: Rejection; readonly unavailable?: Unavailable };

/** The retryable outcome: nothing was changed (see {@link inDoubt} for when that is not known). */
export function unavailable(cause: string, retryAfterMs: number): TurnResult {
  return {
    ok: false,
    rejection: { code: "UNAVAILABLE", message: `the event stream could not be used in time: ${cause}` },
    unavailable: { cause, retryAfterMs },
  };
}

/** The outcome when the turn's own event may still be stored: not to be answered as "nothing was changed". */
export function inDoubt(cause: string, retryAfterMs: number): TurnResult {
  return {
    ok: false,
    rejection: { code: "UNAVAILABLE", message: `the outcome is not known: ${cause}; retry with the same requestId` },
    unavailable: { cause, retryAfterMs, inDoubt: true },
  };
}

/** Is `result` a turn whose own event may still be stored? */
export function isInDoubt(result: TurnResult): boolean {
  return !result.ok && result.unavailable?.inDoubt === true;
}

/** How soon a client may retry after a read of the stream failed. */
const READ_RETRY_AFTER_MS = 500;

/**
 * The retryable outcome for a step that threw: a read of the stream that
 * failed or missed its deadline (the only way code below the api throws).
 */
export function unavailableAfter(error: unknown): TurnResult {
  return unavailable(error instanceof Error ? error.message : String(error), READ_RETRY_AFTER_MS);
}

/** Is `result` the retryable outcome (whoever built it)? */
export function isUnavailable(result: TurnResult): boolean {
  return !result.ok && result.rejection.code === "UNAVAILABLE";
}

/**
 * Whether a turn has an append out whose fate it does not know. The
 * contract's `UNAVAILABLE` says "nothing was changed", so a turn may only
 * answer it while no event of its own can still land: an append in flight,
 * or one whose acknowledgement was lost (a timeout, or a duplicate that
 * JetStream has not stored yet), may be stored later — after a partition
 * heals, the leader that took it can still commit it.
 *
 * A lost append carried the expected subject sequence it was decided on, so
 * it can only ever land right after that sequence. Once the actor's subject
 * is known to have moved past it, and the turn's own event is not what moved
 * it, the lost append can never be stored and the doubt is settled.
 */
export class AppendDoubt {
  /** The expected subject sequence of an append whose acknowledgement was lost. */
  private lostAt: number | undefined;
  /** The expected subject sequence of the append last sent. */
  private pendingAt = 0;
  private inFlight = false;

  /** Whether an answer of "nothing was changed" could be wrong now. */
  get open(): boolean {
    return this.inFlight || this.lostAt !== undefined;
  }

  /** An append with expected subject sequence `expectedSeq` is sent. */
  sent(expectedSeq: number): void {
    this.inFlight = true;
    this.pendingAt = expectedSeq;
  }

  /** The append got an answer that says whether it was stored (acknowledged, or refused by the stream). */
  answered(): void {
    this.inFlight = false;
  }

  /** The append got no answer that says whether it was stored: it may still land after `expectedSeq`. */
  lost(): void {
    this.inFlight = false;
    // A turn only sends again on the sequence a lost append expected, or on a later one once that one is settled.
    this.lostAt ??= this.pendingAt;
  }

  /**
   * The actor's subject is known to end at `subjectSeq` and the turn's own
   * event is not among what was folded: a lost append that expected an
   * earlier sequence can no longer be stored.
   */
  settledUpTo(subjectSeq: number): void {
    if (this.lostAt !== undefined && subjectSeq > this.lostAt) this.lostAt = undefined;
  }
}
