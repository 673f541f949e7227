/**
 * The event log: the only source of truth. Each actor appends to its own
 * subject with an expected last subject sequence (so one writer wins) and a
 * message id (so a retried append is stored once).
 */

/** One message as the log stores it. */
export interface StoredMessage {
  readonly seq: number;
  readonly subject: string;
  readonly payload: Uint8Array;
  /** When the log stored it, epoch milliseconds. */
  readonly time: number;
  readonly msgId?: string | undefined;
  /**
   * The bytes of `msgId` (printable ASCII) where the log can read them
   * without decoding the headers (src/events/msg-id-header.ts); undefined
   * when it cannot, and `msgId` is to be read instead.
   */
  msgIdBytes?(): Uint8Array | undefined;
  /** Messages of the followed filter still to be delivered after this one, when the log knows (followers report it as lag). */
  readonly pending?: number;
}

/** How to append: the sequence the writer last saw on the subject (0 = none) and a dedup id. */
export interface AppendOptions {
  readonly expectedLastSubjectSeq: number;
  readonly msgId: string;
  /** How long to wait for the store's acknowledgement. */
  readonly timeoutMs?: number;
}

/** Where an append landed; `duplicate` when the message id had been stored already (at `seq`). */
export interface AppendResult {
  readonly seq: number;
  readonly duplicate: boolean;
}

/** What part of the whole stream to read. Bounds are inclusive. */
export interface StreamRange {
  readonly fromSeq?: number;
  readonly toSeq?: number;
  /** Stop after the last message stored at or before this instant (epoch ms). */
  readonly toTime?: number;
  /** Subject filter (wildcards allowed); the whole stream when absent. */
  readonly filter?: string;
}

/** A live subscription to new messages. */
export interface Following {
  /** Stops delivering; resolves within the log's operation timeout whatever the server does. */
  stop(): Promise<void>;
  /** Drops the current subscription and re-creates it from the next sequence (a follower that stalled). */
  restart(): void;
  /**
   * Asks the stream, now, whether this subscription has handed over every
   * message of its filter the stream holds: none stored at or after the next
   * one it would hand over. Cheap: the look starts where the subscription
   * stands (or past the other subjects' messages an earlier look read),
   * unlike a wildcard "last by subject" whose cost grows with the stream
   * when the filter's last message is old. False while messages are in
   * flight to it.
   */
  caughtUp(timeoutMs: number): Promise<boolean>;
  /**
   * Whether a yes from `caughtUp` covers everything the stream has
   * acknowledged, whatever befalls its servers. Not on a replicated stream:
   * a leader cut off from its quorum answers from a past it cannot see
   * beyond (answers that must be exact add the quorum check).
   */
  readonly vouchesForLeader: boolean;
}

/** How a follower reports trouble it recovers from by itself. */
export interface FollowOptions {
  /** Subject filter (wildcards allowed); the whole stream when absent. */
  readonly filter?: string;
  /** Called when the subscription broke and is being re-created from the next sequence. */
  readonly onRestart?: (error: Error, nextSeq: number) => void;
}

/** The append-only event log (JetStream in production, memory in simulations). */
export interface EventLog {
  /**
   * Appends one message to `subject`. Throws {@link WrongLastSequenceError}
   * when the subject's last sequence is not the expected one, and
   * {@link LogUnavailableError} when the log could not be written in time.
   */
  append(subject: string, payload: Uint8Array, options: AppendOptions): Promise<AppendResult>;
  /**
   * The sequence of the last message on `subject` (wildcards allowed), 0 when
   * there is none; a {@link LogUnavailableError} after `timeoutMs` (default: the log's operation timeout).
   */
  lastSubjectSeq(subject: string, timeoutMs?: number): Promise<number>;
  /** Every message on `subject` with sequence >= `fromSeq`, in order. */
  readSubject(subject: string, fromSeq: number): Promise<StoredMessage[]>;
  /** The messages of the stream within `range`, in order. */
  readStream(range?: StreamRange): AsyncIterable<StoredMessage>;
  /**
   * Visits the messages within `range` in order, as fast as the log hands
   * them over (no promise per message; a message's id and stored time are
   * read when asked); `visit` returning false stops the read. A read that
   * receives nothing for `stallMs` fails. For long reads (a start's backlog);
   * a log without it is read through {@link readStream}.
   */
  scan?(range: StreamRange, visit: (message: StoredMessage) => boolean | void, stallMs: number): Promise<void>;
  /**
   * Calls `onMessage` for each message with sequence >= `fromSeq`, now and as
   * they arrive, in stream order and each once. Survives server restarts and
   * leader changes: a broken subscription is re-created from the sequence
   * after the last one delivered.
   */
  follow(fromSeq: number, onMessage: (message: StoredMessage) => void, filter?: string | FollowOptions): Promise<Following>;
  /** The last sequence of the whole stream (0 when empty). */
  lastSeq(): Promise<number>;
}

/** The subject had moved on: somebody else appended since the writer last looked. */
export class WrongLastSequenceError extends Error {
  override readonly name = "WrongLastSequenceError";
  constructor(
    readonly subject: string,
    readonly expected: number,
    options?: ErrorOptions & { readonly actual?: number | undefined },
  ) {
    super(
      `wrong last sequence on ${subject}: expected ${expected}${options?.actual === undefined ? "" : `, found ${options.actual}`}`,
      options,
    );
    this.actual = options?.actual;
  }

  /** The subject's last sequence when the server said it (0 unknown); the writer waits until it has seen it. */
  readonly actual: number | undefined;
}

/** Why a subscription was re-created after the connection came back: expected, and logged as the reconnect itself. */
export class ReconnectedError extends Error {
  override readonly name = "ReconnectedError";
  constructor() {
    super("the connection reconnected");
  }
}

/**
 * The log could not be read or written in time. When `ambiguous` is true the
 * append may still have been stored (the acknowledgement was lost).
 */
export class LogUnavailableError extends Error {
  override readonly name = "LogUnavailableError";
  constructor(
    message: string,
    readonly ambiguous: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
