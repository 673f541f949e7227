/**
 * The production {@link EventLog}: one JetStream stream per prefix, created as
 * docs/protocol.md says (file storage, a duplicate window, deleting and purging
 * denied). Appends carry `Nats-Expected-Last-Subject-Sequence` and
 * `Nats-Msg-Id`; the stream is the arbiter of "one writer per actor".
 */
import { type NatsConnection, nanos, createInbox, type Msg, type MsgHdrs, type Subscription } from "@nats-io/nats-core";
import {
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type StreamConfig,
  type Consumer,
  type ConsumerMessages,
  type ConsumerNotification,
} from "@nats-io/jetstream";
import {
  type AppendOptions,
  type AppendResult,
  type EventLog,
  type FollowOptions,
  type Following,
  type StoredMessage,
  type StreamRange,
  LogUnavailableError,
  WrongLastSequenceError,
  ReconnectedError,
} from "./event-log.ts";
import { scanStream } from "./jetstream-scan.ts";
import { planScan } from "./scan-plan.ts";
import { plainMsgIdOf } from "./msg-id-header.ts";
import { OP_TIMEOUT_MS, withDeadline, pause } from "./deadline.ts";
import { storedMillis } from "./stored-time.ts";
import { leaderHoldsQuorum } from "./leader-lease.ts";
import { whileClusterForms } from "./stream-placement.ts";
import { setTimeout as sleep } from "node:timers/promises";

/** How the event stream is created. */
export interface JetStreamEventLogOptions {
  readonly stream: string;
  readonly subjects: string;
  /** JetStream's duplicate window for `Nats-Msg-Id`, milliseconds. */
  readonly dedupWindowMs: number;
  /** Replicas of the stream (1 on a single server, 3 on a cluster). */
  readonly replicas?: number;
  /** Default append acknowledgement timeout, milliseconds. */
  readonly appendTimeoutMs?: number;
  /** Deadline of every other call to the server (reads, consumer creation), milliseconds (default 5000). */
  readonly opTimeoutMs?: number;
  /** How long {@link JetStreamEventLog.open} tries again while a forming cluster cannot place the stream, ms (default 30,000). */
  readonly placeTimeoutMs?: number;
}

/**
 * What `look` finds, created by `create` when JetStream says it is not there
 * (a stream or a consumer); when another instance created it between the
 * look and the create, what it created.
 */
export async function lookOrCreate<T>(look: () => Promise<T>, create: () => Promise<T>): Promise<T> {
  try {
    return await look();
  } catch (e) {
    const notFound =
      e instanceof JetStreamApiError && (e.code === JetStreamApiCodes.StreamNotFound || e.code === JetStreamApiCodes.ConsumerNotFound);
    if (!notFound) throw e;
  }
  try {
    return await create();
  } catch (createError) {
    return await look().catch(() => {
      throw createError;
    });
  }
}

/** The JetStream-backed {@link EventLog}. */
export class JetStreamEventLog implements EventLog {
  /** Whether the store lately refused appends for lack of space (for `/readyz`). */
  readonly storeSpace = new StoreSpaceWatch();
  private readonly js: JetStreamClient;
  private readonly appendTimeoutMs: number;
  private readonly opTimeoutMs: number;
  /** Appends share one reply inbox (src/events/jetstream-event-log.ts). */
  private readonly pipe: AppendPipe;
  /** Whether the server may refuse a stored message's retry by its sequence rather than call it a duplicate (2.11 and later, or unknown). */
  private readonly sequenceBeforeDuplicates: boolean;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly options: JetStreamEventLogOptions,
    /** The stream's replicas as the server reports them (not as asked: an existing stream is never changed). */
    private readonly replicas: number,
  ) {
    this.js = jsm.jetstream();
    this.pipe = new AppendPipe(nc);
    this.sequenceBeforeDuplicates = !serverBelow(nc.info?.version, 2, 11);
    this.appendTimeoutMs = options.appendTimeoutMs ?? OP_TIMEOUT_MS;
    this.opTimeoutMs = options.opTimeoutMs ?? OP_TIMEOUT_MS;
  }

  /** Connects to the stream, creating it when missing (and widening nothing that exists). */
  static async open(nc: NatsConnection, options: JetStreamEventLogOptions): Promise<JetStreamEventLog> {
    const jsm = await jetstreamManager(nc, { timeout: options.opTimeoutMs ?? OP_TIMEOUT_MS });
    const config = {
      name: options.stream,
      subjects: [options.subjects],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      duplicate_window: nanos(options.dedupWindowMs),
      deny_delete: true,
      deny_purge: true,
      allow_direct: true,
      num_replicas: options.replicas ?? 1,
    } satisfies Partial<StreamConfig>;
    // A cluster started with the service may not place the stream's replicas for a moment.
    const patience = { timeoutMs: options.placeTimeoutMs ?? 30_000, now: () => performance.now(), sleep };
    const info = await whileClusterForms(
      () =>
        lookOrCreate(
          () => jsm.streams.info(config.name),
          () => jsm.streams.add(config),
        ),
      patience,
    );
    return new JetStreamEventLog(nc, jsm, options, info.config.num_replicas);
  }

  /** Opens the log without creating anything (read-only tools). */
  static async attach(nc: NatsConnection, options: JetStreamEventLogOptions): Promise<JetStreamEventLog> {
    const jsm = await jetstreamManager(nc, { timeout: options.opTimeoutMs ?? OP_TIMEOUT_MS });
    const info = await jsm.streams.info(options.stream);
    return new JetStreamEventLog(nc, jsm, options, info.config.num_replicas);
  }

  async append(subject: string, payload: Uint8Array, options: AppendOptions): Promise<AppendResult> {
    try {
      const ack = await this.pipe.append({
        subject,
        payload,
        msgId: options.msgId,
        expectedLastSubjectSeq: options.expectedLastSubjectSeq,
        timeoutMs: options.timeoutMs ?? this.appendTimeoutMs,
      });
      this.storeSpace.accepted();
      return ack;
    } catch (e) {
      if (e instanceof AppendRefusedError && e.errCode === INSUFFICIENT_RESOURCES) this.storeSpace.refused();
      // nats-server 2.11 and later check the expected sequence before the duplicate window, so the retry of an
      // append that was stored meets its own message as the subject's last: that is the duplicate 2.10 answers.
      if (e instanceof WrongLastSequenceError && e.actual !== undefined && this.sequenceBeforeDuplicates) {
        if (await this.storedAs(e.actual, subject, options.msgId)) return { seq: e.actual, duplicate: true };
      }
      throw e;
    }
  }

  /** Whether message `seq` is on `subject` and carries `msgId` (false too when that cannot be read in time). */
  private async storedAs(seq: number, subject: string, msgId: string): Promise<boolean> {
    try {
      const m = await withDeadline(this.jsm.streams.getMessage(this.options.stream, { seq }), this.opTimeoutMs, `read of ${subject}`);
      return m !== null && m.subject === subject && m.header.get("Nats-Msg-Id") === msgId;
    } catch {
      return false;
    }
  }

  async lastSubjectSeq(subject: string, timeoutMs = this.opTimeoutMs): Promise<number> {
    try {
      // The leader's message API (not direct get), so the answer is never stale; on a replicated stream, only
      // from a leader that still holds a quorum (a leader cut off from it answers from a past it cannot see beyond).
      const [m, info] = await withDeadline(
        Promise.all([
          this.jsm.streams.getMessage(this.options.stream, { last_by_subj: subject }),
          this.replicas > 1 ? this.jsm.streams.info(this.options.stream) : undefined,
        ]),
        timeoutMs,
        `read of ${subject}`,
      );
      if (info !== undefined && !leaderHoldsQuorum(info.cluster, this.replicas))
        throw new LogUnavailableError(`read of ${subject}: the stream's leader has not heard from a quorum of its replicas lately`, false);
      return m === null ? 0 : m.seq;
    } catch (e) {
      if (e instanceof LogUnavailableError) throw e;
      throw new LogUnavailableError(`read of ${subject} failed: ${(e as Error).message}`, false, { cause: e });
    }
  }

  async readSubject(subject: string, fromSeq: number): Promise<StoredMessage[]> {
    const last = await this.lastSubjectSeq(subject);
    if (last < fromSeq) return [];
    const out: StoredMessage[] = [];
    for await (const m of this.readStream({ fromSeq, toSeq: last, filter: subject })) out.push(m);
    return out;
  }

  async *readStream(range: StreamRange = {}): AsyncIterable<StoredMessage> {
    const toSeq = range.toSeq ?? (await this.lastSeq());
    const fromSeq = Math.max(1, range.fromSeq ?? 1);
    if (toSeq < fromSeq) return;
    const consumer = await this.js.consumers.get(this.options.stream, {
      // A string, not a one-element list: with a list nats-server 2.10 spends
      // about 1 ms per delivered message on a large stream (100k: 126 s vs 1.5 s).
      filter_subjects: range.filter ?? this.options.subjects,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: fromSeq,
    });
    const info = await consumer.info(true);
    if (info.num_pending === 0) return;
    const messages = await consumer.consume({ max_messages: 1024 });
    try {
      for await (const m of messages) {
        if (m.seq > toSeq) break;
        const stored = toStored(m);
        if (range.toTime !== undefined && stored.time > range.toTime) break;
        yield stored;
        if (m.seq >= toSeq || m.info.pending === 0) break;
      }
    } finally {
      await messages.close();
    }
  }

  async scan(range: StreamRange, visit: (message: StoredMessage) => boolean | void, stallMs: number): Promise<void> {
    const toSeq = range.toSeq ?? (await this.lastSeq());
    const fromSeq = Math.max(1, range.fromSeq ?? 1);
    const source = { jsm: this.jsm, stream: this.options.stream, streamSubjects: this.options.subjects, timeoutMs: this.opTimeoutMs };
    const plan = await planScan(source, range.filter ?? this.options.subjects, fromSeq, toSeq);
    // Read unfiltered, a message of another kind is passed over, and the kind's pending count is what a filtered
    // read would have said, counted down.
    const keep = "keep" in plan ? plan.keep : undefined;
    let pending = "keep" in plan ? plan.count : 0;
    await scanStream(
      this.js,
      this.options.stream,
      { fromSeq, toSeq, filter: plan.filter },
      (m) => {
        if (keep !== undefined && !keep(m.subject)) return;
        if (range.toTime !== undefined && storedMillis(m) > range.toTime) return false;
        return visit(new StoredJsMsg(m, keep === undefined ? m.info.pending : Math.max(0, --pending)));
      },
      stallMs,
    );
  }

  follow(fromSeq: number, onMessage: (message: StoredMessage) => void, filterOrOptions?: string | FollowOptions): Promise<Following> {
    const options: FollowOptions = typeof filterOrOptions === "object" ? filterOrOptions : { filter: filterOrOptions };
    const source: FollowerSource = {
      nc: this.nc,
      js: this.js,
      jsm: this.jsm,
      stream: this.options.stream,
      opTimeoutMs: this.opTimeoutMs,
      // A replicated stream places this one-replica consumer on any of its
      // servers, which may not yet hold what the leader has acknowledged.
      vouchesForLeader: this.replicas === 1,
      // Only where no other server can answer for the stream (a deposed leader answers from its past).
      storedUpTo: this.replicas === 1 ? () => this.pipe.highestAck : undefined,
    };
    return followStream(source, fromSeq, onMessage, (m) => new StoredJsMsg(m, m.info.pending), {
      ...options,
      filter: options.filter ?? this.options.subjects,
    });
  }

  async lastSeq(): Promise<number> {
    const info = await this.jsm.streams.info(this.options.stream);
    return info.state.last_seq;
  }
}

/** A stored message read from JetStream, every field read (the tools keep and compare them). */
function toStored(m: JsMsg): StoredMessage {
  return { seq: m.seq, subject: m.subject, payload: m.data, time: storedMillis(m), msgId: m.headers?.get("Nats-Msg-Id") || undefined };
}

/**
 * A stored message delivered to a follower or a scan. Its message id (a
 * header parse) and stored instant (a parse of the reply subject) are read
 * only when asked: a follower skips most of its own instance's events
 * unread, and the fold needs the id only of events that carry a requestId or
 * are watched.
 */
class StoredJsMsg implements StoredMessage {
  readonly seq: number;
  readonly subject: string;
  readonly payload: Uint8Array;

  constructor(
    private readonly m: JsMsg,
    readonly pending?: number,
  ) {
    this.seq = m.seq;
    this.subject = m.subject;
    this.payload = m.data;
  }

  get time(): number {
    return storedMillis(this.m);
  }

  get msgId(): string | undefined {
    return this.m.headers?.get("Nats-Msg-Id") || undefined;
  }

  msgIdBytes(): Uint8Array | undefined {
    return plainMsgIdOf(this.m);
  }
}

/** Whether `version` ("2.10.27") is known to be older than major.minor. */
function serverBelow(version: string | undefined, major: number, minor: number): boolean {
  const m = /^(\d+)\.(\d+)/.exec(version ?? "");
  if (m === null) return false;
  const [vMajor, vMinor] = [Number(m[1]), Number(m[2])];
  return vMajor < major || (vMajor === major && vMinor < minor);
}

/**
 * Whether the event stream's store has lately refused appends for lack of
 * space (JetStream's "insufficient resources": the server's `max_file_store`
 * or the disk is full). `/readyz` reads it. No probe can tell that space came
 * back without writing, so an accepted append clears it at once, and a
 * refusal counts only for a while: an instance that nobody writes to goes
 * back to ready, and the next refused append marks it again (an orchestrator
 * that took every instance out of rotation would otherwise never see one
 * recover).
 */

/** JetStream's API error code for a store at its limits. */
export const INSUFFICIENT_RESOURCES = 10023;

/** How long one refusal keeps the store counted as full, ms. */
export const STORE_FULL_FOR_MS = 10_000;

/** Tracks the store's last refusal; time is a monotonic clock (injected in tests). */
export class StoreSpaceWatch {
  private refusedAt: number | undefined;

  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly fullForMs: number = STORE_FULL_FOR_MS,
  ) {}

  /** An append was refused for lack of space. */
  refused(): void {
    this.refusedAt = this.now();
  }

  /** An append was stored: there is space again. */
  accepted(): void {
    this.refusedAt = undefined;
  }

  /** True while the last refusal is recent and no append has been stored since. */
  get full(): boolean {
    return this.refusedAt !== undefined && this.now() - this.refusedAt < this.fullForMs;
  }
}

/*
 * Following the event stream with an ordered consumer that this module, not
 * the client library, keeps alive. nats.js re-creates an ordered consumer by
 * itself, but slowly when the server it lived on dies: two missed heartbeats
 * at its default 15 s, and after a reconnect whose consumer look times out
 * (a stream leader being elected) a pause of up to its 30 s pull expiry.
 * Measured in the three-node leader-restart drill, that left followers
 * silent for seconds after the cluster was whole again, and every turn that
 * waited on them answered UNAVAILABLE. So the follower re-creates its
 * consumer itself, at once, from the next sequence, when the connection
 * reconnects or the consumer reports trouble (missed 1 s heartbeats, gone,
 * no responders), and gives a creation that does not answer only
 * {@link OPEN_DEADLINE_MS} before it tries again.
 */

/** How long one consumer creation may take before the follower gives up on it and tries again (it takes milliseconds when a leader answers). */
export const OPEN_DEADLINE_MS = 2000;
/** The server's heartbeat to an idle consumer; two missed ones mean the consumer is gone. */
export const IDLE_HEARTBEAT_MS = 1000;
/** The longest pause between two creations that failed. */
const MAX_BACKOFF_MS = 500;

/** Consumer notifications after which the subscription will not deliver again by itself soon. */
const BROKEN: ReadonlySet<ConsumerNotification["type"]> = new Set([
  "heartbeats_missed",
  "consumer_not_found",
  "consumer_deleted",
  "stream_not_found",
  "no_responders",
]);

/** Where the follower reads from and how long its calls may take. */
export interface FollowerSource {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly stream: string;
  /** Deadline of calls other than a creation (stop, position looks), ms. */
  readonly opTimeoutMs: number;
  /** Whether a caught-up answer of this follower's server covers the leader's acknowledged messages (one replica). */
  readonly vouchesForLeader: boolean;
  /** A sequence every message up to which is known stored (this connection's acknowledgements), where that holds. */
  readonly storedUpTo?: (() => number) | undefined;
}

/**
 * Delivers every message of `filter` from `fromSeq` on, in order and at most
 * once each, across consumer re-creations; resolves once the first consumer
 * is created (rejects when it cannot be within {@link OPEN_DEADLINE_MS}).
 */
export async function followStream(
  source: FollowerSource,
  fromSeq: number,
  onMessage: (message: StoredMessage) => void,
  toStored: (m: JsMsg) => StoredMessage,
  options: FollowOptions & { readonly filter: string },
): Promise<Following> {
  const { filter } = options;
  let next = Math.max(1, fromSeq);
  let stopped = false;
  let consumer: Consumer | undefined;
  /** Below this sequence the stream holds no message of the filter this follower has not handed over. */
  let unmatchedBelow = 0;
  /** Why the current subscription is being dropped, when this module dropped it. */
  let dropped: Error | undefined;

  const open = async (): Promise<ConsumerMessages> => {
    dropped = undefined;
    const deadline = Math.min(source.opTimeoutMs, OPEN_DEADLINE_MS);
    consumer = await withDeadline(
      source.js.consumers.get(source.stream, {
        filter_subjects: filter, // a string: see JetStreamEventLog.readStream
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: next,
      }),
      deadline,
      `follow ${filter}`,
    );
    const messages = await withDeadline(
      consumer.consume({ max_messages: 1024, idle_heartbeat: IDLE_HEARTBEAT_MS }),
      deadline,
      `follow ${filter}`,
    );
    void watchNotifications(messages);
    return messages;
  };
  let messages: ConsumerMessages | undefined = await open();

  const close = async (): Promise<void> => {
    const current = messages;
    messages = undefined;
    if (current !== undefined) await withDeadline(current.close(), source.opTimeoutMs, "close").catch(() => undefined);
  };
  /** Ends the current subscription; the loop re-creates it from the next sequence. */
  const drop = (why: Error): void => {
    if (stopped || messages === undefined) return;
    dropped ??= why;
    void close();
  };
  async function watchNotifications(current: ConsumerMessages): Promise<void> {
    for await (const note of current.status()) {
      if (current !== messages) return;
      if (BROKEN.has(note.type)) drop(new Error(`the consumer reported ${note.type}`));
    }
  }
  // The server this connection reached may have been the one holding the consumer.
  const statuses = source.nc.status();
  void (async () => {
    for await (const status of statuses) if (status.type === "reconnect") drop(new ReconnectedError());
  })();

  const loop = (async () => {
    let backoffMs = 50;
    while (!stopped) {
      try {
        messages ??= await open();
        for await (const m of messages) {
          if (m.seq < next) continue; // a re-created consumer may repeat what was delivered
          next = m.seq + 1;
          backoffMs = 50;
          onMessage(toStored(m));
        }
        if (!stopped) throw dropped ?? new Error("the subscription ended");
      } catch (e) {
        // A draining or closed connection delivers nothing again: a re-creation would only fail, and its warning mislead a stop.
        if (stopped || source.nc.isDraining() || source.nc.isClosed()) break;
        options.onRestart?.(e as Error, next);
        await close();
        await pause(backoffMs);
        backoffMs = Math.min(2 * backoffMs, MAX_BACKOFF_MS);
      }
    }
  })();

  return {
    stop: async () => {
      stopped = true;
      // nats.js's status iterator leaves the connection's listeners on stop().
      (statuses as unknown as { stop(): void }).stop();
      await close();
      await withDeadline(loop, source.opTimeoutMs, "follower stop").catch(() => undefined);
    },
    restart: () => drop(new Error("the follower stalled")),
    vouchesForLeader: source.vouchesForLeader,
    caughtUp: async (timeoutMs) => {
      // The stream's own answer, not the consumer's: nats-server acknowledges an append before it signals the
      // consumers, so right after another connection's acknowledgement the consumer may still say "nothing
      // pending" without that message. The leader's message API looks at what is stored: no message of the
      // filter at or after the next one this follower would hand over means it handed over all of them.
      const storedBefore = source.storedUpTo?.() ?? 0;
      const from = Math.max(next, unmatchedBelow);
      const request = { seq: from, next_by_subj: filter } as unknown as { seq: number };
      const m = await withDeadline(source.jsm.streams.getMessage(source.stream, request), timeoutMs, `position of follow ${filter}`);
      if (m !== null) return false;
      // Nothing of the filter from `from` on, and everything up to `storedBefore` was stored before the look: the
      // next look need not read the messages of other subjects up to there again.
      unmatchedBelow = Math.max(unmatchedBelow, storedBefore + 1);
      return true;
    },
  };
}

/*
 * JetStream appends pipelined on one reply inbox per connection. A
 * `js.publish` builds a request object, a timer and, when it ends, an error
 * object for every append (measured: about 8 µs and a few KB per append on
 * this service's hot path); here every append is one core publish with a
 * reply subject under the pipe's own inbox, one entry in a map, and one
 * timer sweeps the deadlines of all appends in flight.
 *
 * Each message keeps its own `Nats-Expected-Last-Subject-Sequence` and
 * `Nats-Msg-Id`, so pipelining changes nothing about what the stream
 * accepts: one writer per subject, each message id stored once.
 *
 * Outcomes, as {@link EventLog.append} defines them: an acknowledgement
 * resolves; the server's "wrong last sequence" (10071, and on a replicated
 * stream of nats-server 2.12 and later 10164 and 10163, see
 * {@link refusalOf}) is a {@link WrongLastSequenceError}; any other API error, or no stream
 * listening (503), a definite {@link LogUnavailableError}; no answer by the
 * deadline an ambiguous one (the message may have been stored).
 */

/** JetStream's API error code for a failed expected-last-subject-sequence check, naming the subject's last sequence. */
const WRONG_LAST_SEQUENCE = 10071;
/**
 * The same refusal without the sequence: a replicated stream (nats-server
 * 2.12 and later) refuses an append whose subject has another message still
 * being replicated, before it can know that message's sequence.
 */
const WRONG_LAST_SEQUENCE_IN_FLIGHT = 10164;
/** A new stream leader not yet able to check expected sequences per subject (2.12 and later): nothing stored. */
const EXPECTED_SEQUENCE_NOT_READY = 10163;

interface InFlight {
  readonly subject: string;
  readonly expected: number;
  readonly deadline: number;
  readonly resolve: (result: AppendResult) => void;
  readonly reject: (error: Error) => void;
}

/** The stream refused an append with an API error (definite: nothing was stored); `errCode` is JetStream's. */
export class AppendRefusedError extends LogUnavailableError {
  constructor(
    message: string,
    readonly errCode: number | undefined,
  ) {
    super(message, false);
  }
}

/** What the pipe is told to append. */
export interface PipedAppend {
  readonly subject: string;
  readonly payload: Uint8Array;
  readonly msgId: string;
  readonly expectedLastSubjectSeq: number;
  readonly timeoutMs: number;
}

/** Appends to JetStream on one shared reply inbox; every append bounded by its own deadline. */
export class AppendPipe {
  private readonly inFlight = new Map<string, InFlight>();
  private subscription: Subscription | undefined;
  private inbox = "";
  private next = 0;
  private sweeper: NodeJS.Timeout | undefined;
  /** The highest stream sequence an acknowledgement named: every message up to it was stored when it came. */
  highestAck = 0;

  constructor(
    private readonly nc: NatsConnection,
    /** How often deadlines are swept while appends are in flight (ms). */
    private readonly resolutionMs = 50,
  ) {}

  /** Appends one message; settles by `timeoutMs` at the latest. */
  append(request: PipedAppend): Promise<AppendResult> {
    const inbox = this.replyInbox();
    const token = (this.next++).toString(36);
    return new Promise<AppendResult>((resolve, reject) => {
      try {
        const h = appendHeaders(request.msgId, request.expectedLastSubjectSeq);
        this.nc.publish(request.subject, request.payload, { reply: `${inbox}.${token}`, headers: h as unknown as MsgHdrs });
      } catch (e) {
        // Not sent (the connection is closed or draining): nothing can have been stored.
        reject(new LogUnavailableError(`append to ${request.subject} failed: ${(e as Error).message}`, false, { cause: e }));
        return;
      }
      this.inFlight.set(token, {
        subject: request.subject,
        expected: request.expectedLastSubjectSeq,
        deadline: performance.now() + request.timeoutMs,
        resolve,
        reject,
      });
      this.sweeper ??= setInterval(() => this.sweep(), this.resolutionMs);
    });
  }

  /** Appends waiting for their acknowledgement. */
  get size(): number {
    return this.inFlight.size;
  }

  /** Fails what is in flight (ambiguously) and drops the inbox. */
  close(): void {
    for (const [token, a] of this.inFlight) {
      this.inFlight.delete(token);
      a.reject(new LogUnavailableError(`append to ${a.subject} got no answer: the event log was closed`, true));
    }
    this.stopSweeper();
    this.subscription?.unsubscribe();
    this.subscription = undefined;
  }

  /** The inbox replies come to, subscribed once (again after the subscription closed, e.g. a permission error). */
  private replyInbox(): string {
    if (this.subscription === undefined || this.subscription.isClosed()) {
      // The connection's own inbox prefix (e.g. `_INBOX_<user>` under least-privilege permissions), as nats.js uses for requests.
      const prefix = (this.nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
      this.inbox = createInbox(prefix);
      this.subscription = this.nc.subscribe(`${this.inbox}.*`, { callback: (_err, msg) => this.onReply(msg) });
    }
    return this.inbox;
  }

  private onReply(msg: Msg): void {
    const token = msg.subject.slice(this.inbox.length + 1);
    const a = this.inFlight.get(token);
    if (a === undefined) return; // answered after its deadline: the append was already reported ambiguous
    this.inFlight.delete(token);
    if (this.inFlight.size === 0) this.stopSweeper();
    if (msg.headers?.code === 503) {
      a.reject(new LogUnavailableError(`append to ${a.subject} failed: no stream answers on it`, false));
      return;
    }
    let ack: { seq?: number; duplicate?: boolean; error?: { err_code?: number; description?: string } };
    try {
      ack = msg.json();
    } catch (e) {
      a.reject(new LogUnavailableError(`append to ${a.subject} got an answer that is not JSON`, true, { cause: e }));
      return;
    }
    if (ack.error !== undefined) {
      a.reject(refusalOf(a.subject, a.expected, ack.error));
      return;
    }
    if (ack.seq !== undefined && ack.seq > this.highestAck) this.highestAck = ack.seq;
    a.resolve({ seq: ack.seq ?? 0, duplicate: ack.duplicate === true });
  }

  private sweep(): void {
    const now = performance.now();
    for (const [token, a] of this.inFlight) {
      if (a.deadline > now) continue;
      this.inFlight.delete(token);
      a.reject(new LogUnavailableError(`append to ${a.subject} failed: no acknowledgement in time`, true));
    }
    if (this.inFlight.size === 0) this.stopSweeper();
  }

  private stopSweeper(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}

/** Header values end at a line break: one in a message id would end the header block early. */
const LINE_BREAK = /[\r\n]/;

/**
 * An append's two headers, encoded once. `publish` reads nothing of its
 * headers but `encode()`; nats.js's own `MsgHdrs` builds a map, spells
 * each key in canonical case character by character and copies the keys it
 * might replace, which was 2.3 KB and two passes of string building per
 * append in an allocation profile of the lock path. The bytes are what
 * `MsgHdrs.encode()` writes for the same two headers, value trimmed as it
 * trims; a line break in the id is refused as it refuses one.
 */
export function appendHeaders(msgId: string, expectedLastSubjectSeq: number): EncodedHeaders {
  if (LINE_BREAK.test(msgId)) throw new TypeError("header values cannot contain \\r or \\n");
  const block = `NATS/1.0\r\nNats-Msg-Id: ${msgId.trim()}\r\nNats-Expected-Last-Subject-Sequence: ${expectedLastSubjectSeq}\r\n\r\n`;
  return { encode: () => utf8.encode(block) };
}

/** Headers as nats.js's `publish` uses them: it calls `encode()` and nothing else (the append-pipe tests run against a real server). */
export interface EncodedHeaders {
  encode(): Uint8Array;
}

const utf8 = new TextEncoder();

/**
 * The error for an append the stream refused (nothing was stored). Each
 * "wrong last sequence" is a conflict the writer settles by reading the
 * subject again and deciding anew; so is a new leader not yet ready to check
 * sequences, which passes once the leader is current (measured on 2.15: a
 * steady trickle of 10164 under two contending instances, and 10163 just
 * after a leader election, each of which became UNAVAILABLE when taken for
 * a failure).
 */
export function refusalOf(subject: string, expected: number, error: { err_code?: number; description?: string }): Error {
  const description = error.description ?? "unknown error";
  switch (error.err_code) {
    case WRONG_LAST_SEQUENCE: {
      // The server names the subject's actual last sequence ("wrong last sequence: 42").
      const actual = /wrong last sequence: (\d+)/.exec(description)?.[1];
      return new WrongLastSequenceError(subject, expected, { actual: actual === undefined ? undefined : Number(actual) });
    }
    case WRONG_LAST_SEQUENCE_IN_FLIGHT:
    case EXPECTED_SEQUENCE_NOT_READY:
      return new WrongLastSequenceError(subject, expected);
    default:
      return new AppendRefusedError(`append to ${subject} failed: ${description}`, error.err_code);
  }
}
