/**
 * The production {@link EventLog}: one JetStream stream per prefix, created as
 * docs/protocol.md says (file storage, a duplicate window, deleting and purging
 * denied). Appends carry `Nats-Expected-Last-Subject-Sequence` and
 * `Nats-Msg-Id`; the stream is the arbiter of "one writer per actor".
 */
import { type NatsConnection, nanos } from "@nats-io/nats-core";
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
  type StreamInfo,
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
} from "./event-log.ts";
import { AppendPipe, AppendRefusedError } from "./append-pipe.ts";
import { followStream } from "./jetstream-follower.ts";
import { scanStream } from "./jetstream-scan.ts";
import { plainMsgIdOf } from "./msg-id-header.ts";
import { OP_TIMEOUT_MS, withDeadline } from "./deadline.ts";
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

/** The stream's info, creating it as `config` says when there is none. */
async function lookOrCreate(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }): Promise<StreamInfo> {
  try {
    return await jsm.streams.info(config.name);
  } catch (e) {
    if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound)) throw e;
  }
  try {
    return await jsm.streams.add(config);
  } catch (addError) {
    // Another instance may have created it between our look and our add.
    return await jsm.streams.info(config.name).catch(() => {
      throw addError;
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
  /** Appends share one reply inbox (src/events/append-pipe.ts). */
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
    const info = await whileClusterForms(() => lookOrCreate(jsm, config), patience);
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
    const scan = { fromSeq: range.fromSeq, toSeq, filter: range.filter ?? this.options.subjects };
    await scanStream(
      this.js,
      this.options.stream,
      scan,
      (m) => (range.toTime !== undefined && storedMillis(m) > range.toTime ? false : visit(new StoredJsMsg(m, m.info.pending))),
      stallMs,
    );
  }

  follow(fromSeq: number, onMessage: (message: StoredMessage) => void, filterOrOptions?: string | FollowOptions): Promise<Following> {
    const options: FollowOptions = typeof filterOrOptions === "object" ? filterOrOptions : { filter: filterOrOptions };
    const source = {
      nc: this.nc,
      js: this.js,
      stream: this.options.stream,
      opTimeoutMs: this.opTimeoutMs,
      // A replicated stream places this one-replica consumer on any of its
      // servers, which may not yet hold what the leader has acknowledged.
      vouchesForLeader: this.replicas === 1,
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
