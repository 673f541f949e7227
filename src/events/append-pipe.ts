/**
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
import { createInbox, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/nats-core";
import type { AppendResult } from "./event-log.ts";
import { LogUnavailableError, WrongLastSequenceError } from "./event-log.ts";

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
