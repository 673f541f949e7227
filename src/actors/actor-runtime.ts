/**
 * The actor runtime of one service instance. Each registered kind gets a
 * projection (one stream follower) that holds every actor's state; an actor
 * is a mailbox per id (commands decided in arrival order, one at a time)
 * over the state its kind's projection holds, and exists only while it has
 * commands, so memory follows live state, not traffic. A command's turn is
 * plain bounded code (src/actors/command-turn.ts) around the kind's pure
 * logic: no interpreter, invoked actor or timer per request.
 */
import type { Logger } from "pino";
import { nuid } from "@nats-io/nats-core";
import { encodeEvent, type EventEnvelope, type RecordedEvent } from "../events/envelope.ts";
import { requestMsgId, type AppendResult, type EventLog } from "../events/event-log.ts";
import { instantMs } from "../events/instant.ts";
import { type ActorKind, type Subjects } from "../contract/subjects.ts";
import { KindProjection } from "../projections/kind-projection.ts";
import { type ProjectionRecord } from "../projections/kind-fold.ts";
import { type ProjectionSnapshotStore } from "../projections/snapshot-stores.ts";
import type { ActorLogic, Command } from "./actor-logic.ts";
import type { Clock } from "./clock.ts";
import type { Decision } from "./decision.ts";
import { runTurn, timedOut, type AppendInput, type EncodedEvent, type PendingCommand, type TurnPorts } from "./command-turn.ts";
import { TurnDeadlines } from "./turn-deadlines.ts";
import { AppendDoubt } from "./append-doubt.ts";
import { isUnavailable, unavailable, type TurnResult } from "./turn-result.ts";
import { IdsInDoubt } from "./ids-in-doubt.ts";
import type { BacklogWorker } from "../projections/kind-projection.ts";

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
  /** What tells this request from another that reuses its `requestId` (src/transport/request-fingerprint.ts). */
  readonly fingerprint?: string | undefined;
  /** Who sent it, as NATS says (`""`: unknown). */
  readonly principal?: string | undefined;
  /** Whether that principal is an operator (it may act on any holder's lease). */
  readonly operator?: boolean | undefined;
  /**
   * When the request must be answered, on the runtime's timer clock (see
   * {@link ActorRuntime.deadlineFor}); default: the request timeout from now.
   * A command that spans turns passes one deadline to all of them.
   */
  readonly deadline?: number | undefined;
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
  readonly logic: ActorLogic<unknown, Command>;
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
  register<S, C extends Command, E extends EventEnvelope>(logic: ActorLogic<S, C, E>): KindProjection<S> {
    const { log, subjects, logger, backlogWorker } = this.options;
    const erased = logic as unknown as ActorLogic<unknown, Command>;
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

  /** A command answered: logged when it was UNAVAILABLE or left in doubt, and no longer in flight. */
  private finished(kind: ActorKind, id: string, pending: PendingCommand, result: TurnResult): void {
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
   * may still be stored (src/actors/ids-in-doubt.ts): a retry should go
   * there first.
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

  private portsFor(kind: ActorKind, logic: ActorLogic<unknown, Command>, projection: KindProjection<unknown>): TurnPorts {
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
      decide: (state, command, now) => logic.decide(state, command, now),
      holderOf: (state, command, now) => logic.holderOf?.(state, command, now),
      encode: (id, decision, now, requestId, by) => encode(kind, id, decision, now, requestId, by),
      applyOwn: (id, base: ProjectionRecord<unknown>, event: EncodedEvent, seq, msgId) => {
        const recorded: RecordedEvent = { seq, event: event.envelope, msgId };
        const stateAfter = logic.evolve(base.state, recorded);
        const reply = logic.replyFor(stateAfter, recorded);
        projection.applyOwn(id, recorded, stateAfter, instantMs(event.envelope.at), reply);
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
  return { envelope, payload: encodeEvent(envelope) };
}

/** A proxy grant's message id is the kind's, not the proxy's: one requestId is one grant, whichever proxy takes it. */
function sharesMsgIdAcrossIds(kind: ActorKind, command: Command): boolean {
  return kind === "proxy" && command.op === "grant";
}
