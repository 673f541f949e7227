/**
 * Request/reply to `<prefix>.v1.<kind>.<op>`: JSON out, the success body or a
 * typed contract error back, an automatic `requestId` on mutations so that
 * the one retry after a timeout is answered from the first attempt's reply.
 */
import { randomUUID } from "node:crypto";
import { createInbox, TimeoutError, type ConnectionOptions, type Msg, type NatsConnection } from "@nats-io/nats-core";
import { Subjects, isValidPrefix } from "../contract/subjects.ts";
import { decodeReply, inboxRefusedHint, LeaseholdTimeoutError, LeaseholdTransportError } from "./errors.ts";

/** Options of one call. */
export interface CallOptions {
  /** Per-attempt timeout (default: the client's `timeoutMs`). */
  readonly timeoutMs?: number;
  /** Retry once after a timeout (default true; safe because mutations carry a requestId). */
  readonly retry?: boolean;
  /**
   * Add a fresh requestId to a mutation that has none (default true). Turning
   * it off saves the service recording a repeat (e.g. a `route.acquire` that
   * reuses a lease then writes nothing), at the price of an unsafe retry,
   * so a mutation without a requestId is then not retried.
   */
  readonly autoRequestId?: boolean;
  /**
   * Stops waiting for the answer when aborted: the call rejects with the
   * signal's reason. The request itself is not taken back (a waiting
   * acquire's place in the queue lapses by itself when its `waitMs` ends).
   */
  readonly signal?: AbortSignal;
}

/** Settings of a {@link LeaseholdClient}. */
export interface LeaseholdClientOptions {
  /** The service's `--prefix` (default `leasehold`). */
  readonly prefix?: string;
  /** Per-attempt request timeout in ms (default 5000). */
  readonly timeoutMs?: number;
  /**
   * Where replies to this client's requests and its awaited durable replies
   * arrive: default the connection's own `inboxPrefix`, else `_INBOX`. A user
   * of `leasehold nats-config` may only receive under `_INBOX_<user>`: give
   * that to `connect` itself, which covers JetStream's requests too (durable
   * publishes, `watch`); given only here, each request takes its own inbox.
   */
  readonly inboxPrefix?: string;
}

/** Default per-attempt timeout: above one append (the service retries a slow one). */
export const DEFAULT_TIMEOUT_MS = 5000;

const encoder = new TextEncoder();

/** Sends requests to one service prefix on one connection. */
export class Transport {
  readonly subjects: Subjects;
  readonly timeoutMs: number;
  /** Where replies to this client arrive (see {@link LeaseholdClientOptions.inboxPrefix}). */
  readonly inboxPrefix: string;
  /** The client's inbox prefix is not the connection's: each request subscribes its own reply subject. */
  private readonly ownInbox: boolean;

  constructor(
    readonly nc: NatsConnection,
    options: LeaseholdClientOptions = {},
  ) {
    const prefix = options.prefix ?? "leasehold";
    if (!isValidPrefix(prefix))
      throw new TypeError(`invalid prefix ${JSON.stringify(prefix)}: subject tokens of A-Z a-z 0-9 _ - separated by dots`);
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isFinite(timeoutMs) || timeoutMs < 1) throw new TypeError(`timeoutMs must be at least 1, got ${timeoutMs}`);
    this.subjects = new Subjects(prefix);
    this.timeoutMs = timeoutMs;
    const own = connectionInboxPrefix(nc);
    const inboxPrefix = options.inboxPrefix ?? own ?? "_INBOX";
    if (!isValidPrefix(inboxPrefix))
      throw new TypeError(`invalid inboxPrefix ${JSON.stringify(inboxPrefix)}: subject tokens separated by dots, without wildcards`);
    this.inboxPrefix = inboxPrefix;
    this.ownInbox = inboxPrefix !== (own ?? "_INBOX");
  }

  /** A fresh reply subject under this client's {@link inboxPrefix}. */
  newInbox(): string {
    return createInbox(this.inboxPrefix);
  }

  /** Sends one request (a mutation gets a requestId) and returns the success body; throws a LeaseholdError or a LeaseholdTransportError. */
  async request<Reply>(
    kind: string,
    op: string,
    body: object,
    mutating: boolean,
    options: CallOptions = {},
    repeatable = false,
  ): Promise<Reply> {
    const subject = this.subjects.command(kind, op);
    const given = (body as { requestId?: string }).requestId;
    const requestId = given ?? (mutating && options.autoRequestId !== false ? randomUUID() : undefined);
    const payload = encoder.encode(JSON.stringify(requestId === given ? body : { ...body, requestId }));
    const timeout = options.timeoutMs ?? this.timeoutMs;
    // A read is repeatable as is; a mutation only with a requestId (the service answers the repeat from the first reply).
    // `repeatable` mutations (route.acquire) give the right answer when simply sent again.
    const attempts = options.retry !== false && (!mutating || repeatable || requestId !== undefined) ? 2 : 1;
    const { signal } = options;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      let msg: Msg;
      try {
        const reply = this.nc.request(subject, payload, this.ownInbox ? { timeout, noMux: true, reply: this.newInbox() } : { timeout });
        msg = signal === undefined ? await reply : await abortable(reply, signal);
      } catch (e) {
        if (signal?.aborted === true && e === signal.reason) throw e;
        if (e instanceof TimeoutError) {
          if (attempt < attempts) continue;
          throw new LeaseholdTimeoutError(subject, timeout, attempt, requestId, { cause: e });
        }
        const message = (e as Error).message;
        throw new LeaseholdTransportError(`request on ${subject} failed: ${message}${inboxRefusedHint(message)}`, subject, { cause: e });
      }
      return decodeReply<Reply>(msg, subject);
    }
  }
}

/** The `inboxPrefix` the connection was opened with (nats.js keeps its options on the connection object). */
function connectionInboxPrefix(nc: NatsConnection): string | undefined {
  return (nc as { options?: ConnectionOptions }).options?.inboxPrefix;
}

/** `promise`, or a rejection with the signal's reason as soon as it aborts (the promise is left to settle unobserved). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    // The signal's reason is what fetch and friends reject with, whatever its type.
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: Error) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}
