/**
 * The client's errors. A contract error (the service answered with
 * `Nats-Service-Error-Code` and `{"error": {...}}`) is a {@link LeaseholdError},
 * one subclass per code carrying the code's details; a request that got no
 * answer is a {@link LeaseholdTransportError} ({@link LeaseholdTimeoutError}
 * when it timed out), never mistaken for a domain answer.
 */
import type { Msg } from "@nats-io/nats-core";
import { ERROR_MESSAGE_HEADER, ERROR_STATUS_HEADER, type ErrorCode } from "../contract/errors.ts";
import type { ProxyStats } from "../contract/messages.ts";

export type { ErrorCode };

/** Where and how a contract error was answered. */
export interface LeaseholdErrorInit {
  /** `Nats-Service-Error-Code`, an HTTP-like status. */
  readonly status: number;
  /** Every field of the error body but `code` and `message`. */
  readonly details?: Readonly<Record<string, unknown>>;
  /** The subject the request or command went to. */
  readonly subject?: string;
  readonly cause?: unknown;
}

/** A contract error: the service answered and refused; `code` says why. */
export class LeaseholdError extends Error {
  override readonly name: string = "LeaseholdError";
  /** A code of the contract, or another string the service sent (e.g. `INTERNAL` for a failed handler). */
  readonly code: ErrorCode | (string & {});
  readonly status: number;
  readonly details: Readonly<Record<string, unknown>>;
  readonly subject: string | undefined;

  constructor(code: string, message: string, init: LeaseholdErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = code;
    this.status = init.status;
    this.details = init.details ?? {};
    this.subject = init.subject;
  }

  /** True when repeating the same request later may succeed (nothing was changed). */
  get retryable(): boolean {
    return this.code === "UNAVAILABLE";
  }
}

/** `BAD_REQUEST` (400): unparsable or ill-typed request, or a limit broken. */
export class BadRequestError extends LeaseholdError {
  override readonly name = "BadRequestError";
  override readonly code = "BAD_REQUEST" as const;
}

/** `TTL_EXCEEDS_MAX` (400): a lock TTL above the server's `maxTtlMs`. */
export class TtlExceedsMaxError extends LeaseholdError {
  override readonly name = "TtlExceedsMaxError";
  override readonly code = "TTL_EXCEEDS_MAX" as const;
  /** The TTL asked for. */
  get ttlMs(): number {
    return this.details.ttlMs as number;
  }
  /** The server's ceiling. */
  get maxTtlMs(): number {
    return this.details.maxTtlMs as number;
  }
}

/** `UNKNOWN_LEASE` (404): a proxy lease id that does not resolve. */
export class UnknownLeaseError extends LeaseholdError {
  override readonly name = "UnknownLeaseError";
  override readonly code = "UNKNOWN_LEASE" as const;
}

/** `UNKNOWN_PROXY` (404): candidates or `proxy.remove` named proxies that are not registered. */
export class UnknownProxyError extends LeaseholdError {
  override readonly name = "UnknownProxyError";
  override readonly code = "UNKNOWN_PROXY" as const;
  /** The proxies that are not registered. */
  get proxies(): readonly string[] {
    return (this.details.proxies as string[] | undefined) ?? [];
  }
}

/** `UNKNOWN_HOST` (404): a pin to a host the route has never seen as a candidate. */
export class UnknownHostError extends LeaseholdError {
  override readonly name = "UnknownHostError";
  override readonly code = "UNKNOWN_HOST" as const;
}

/** `NO_SESSION` (404): the session ended (closed or expired) or never existed. */
export class NoSessionError extends LeaseholdError {
  override readonly name = "NoSessionError";
  override readonly code = "NO_SESSION" as const;
}

/** `NO_MATCH` (409): no proxy could take a lease; `stats` says why. */
export class NoMatchError extends LeaseholdError {
  override readonly name = "NoMatchError";
  override readonly code = "NO_MATCH" as const;
  /** How the considered proxies were ruled out. */
  get stats(): ProxyStats {
    return this.details.stats as ProxyStats;
  }
}

/** `LEASE_EXISTS` (409): the lock's lease is live (acquire is not re-entrant). */
export class LeaseExistsError extends LeaseholdError {
  override readonly name = "LeaseExistsError";
  override readonly code = "LEASE_EXISTS" as const;
  /** The current holder. */
  get owner(): string {
    return this.details.owner as string;
  }
  /** When the current lease expires (server instant, RFC 3339). */
  get expiresAt(): string {
    return this.details.expiresAt as string;
  }
}

/** `NOT_HELD` (409): lock renew/release by a non-holder or with a stale etag. */
export class NotHeldError extends LeaseholdError {
  override readonly name = "NotHeldError";
  override readonly code = "NOT_HELD" as const;
}

/** `ALREADY_RELEASED` (410): release of a lock that was released, reset or never acquired. */
export class AlreadyReleasedError extends LeaseholdError {
  override readonly name = "AlreadyReleasedError";
  override readonly code = "ALREADY_RELEASED" as const;
}

/** `CORRUPT` (500): the lock's history breaks its invariants; only `lock.reset` helps. */
export class CorruptError extends LeaseholdError {
  override readonly name = "CorruptError";
  override readonly code = "CORRUPT" as const;
}

/** `NO_HOST` (503): no healthy, non-draining candidate host. */
export class NoHostError extends LeaseholdError {
  override readonly name = "NoHostError";
  override readonly code = "NO_HOST" as const;
}

/** `PINNED_DOWN` (503): the route is pinned to an unhealthy host. */
export class PinnedDownError extends LeaseholdError {
  override readonly name = "PinnedDownError";
  override readonly code = "PINNED_DOWN" as const;
}

/** `UNAVAILABLE` (503): the event stream could not be written in time; nothing was changed. */
export class UnavailableError extends LeaseholdError {
  override readonly name = "UnavailableError";
  override readonly code = "UNAVAILABLE" as const;
}

/** `UNAUTHENTICATED` (401): the service requires a principal and NATS named none for this request (connect through the account layout). */
export class UnauthenticatedError extends LeaseholdError {
  override readonly name = "UnauthenticatedError";
  override readonly code = "UNAUTHENTICATED" as const;
}

/** `REQUEST_ID_REUSED` (422): the `requestId` was used within the dedup window by another request (another op, body or principal); nothing changed. */
export class RequestIdReusedError extends LeaseholdError {
  override readonly name = "RequestIdReusedError";
  override readonly code = "REQUEST_ID_REUSED" as const;
  /** The requestId that was reused. */
  get requestId(): string {
    return this.details.requestId as string;
  }
}

/** `FORBIDDEN` (403): another principal's lease or session, or an operator op, and this principal is not an operator. */
export class ForbiddenError extends LeaseholdError {
  override readonly name = "ForbiddenError";
  override readonly code = "FORBIDDEN" as const;
  /** Who the service took the requester for (`<account>/<user>`, `<account>`, or `""`). */
  get principal(): string {
    return this.details.principal as string;
  }
}

/** `TOO_MANY_WAITERS` (429): the lock's wait queue is full (`--max-waiters`); nothing was appended. */
export class TooManyWaitersError extends LeaseholdError {
  override readonly name = "TooManyWaitersError";
  override readonly code = "TOO_MANY_WAITERS" as const;
  /** Live waiters on the lock. */
  get waiters(): number {
    return this.details.waiters as number;
  }
  /** The service's `--max-waiters`. */
  get maxWaiters(): number {
    return this.details.maxWaiters as number;
  }
}

type ErrorClass = new (code: string, message: string, init: LeaseholdErrorInit) => LeaseholdError;

/** The class of each contract code. */
export const ERROR_CLASSES: Readonly<Record<ErrorCode, ErrorClass>> = {
  UNAUTHENTICATED: UnauthenticatedError,
  BAD_REQUEST: BadRequestError,
  REQUEST_ID_REUSED: RequestIdReusedError,
  FORBIDDEN: ForbiddenError,
  TOO_MANY_WAITERS: TooManyWaitersError,
  TTL_EXCEEDS_MAX: TtlExceedsMaxError,
  UNKNOWN_LEASE: UnknownLeaseError,
  UNKNOWN_PROXY: UnknownProxyError,
  UNKNOWN_HOST: UnknownHostError,
  NO_SESSION: NoSessionError,
  NO_MATCH: NoMatchError,
  LEASE_EXISTS: LeaseExistsError,
  NOT_HELD: NotHeldError,
  ALREADY_RELEASED: AlreadyReleasedError,
  CORRUPT: CorruptError,
  NO_HOST: NoHostError,
  PINNED_DOWN: PinnedDownError,
  UNAVAILABLE: UnavailableError,
};

/**
 * What to do when the server refused this connection's reply inbox: a named
 * user of `leasehold nats-config` receives replies only under `_INBOX_<user>`.
 * Empty for any other failure.
 */
export function inboxRefusedHint(message: string): string {
  const refused = /Permissions Violation for Subscription to "(_INBOX[^".]*)/.exec(message)?.[1];
  return refused === undefined
    ? ""
    : ` (this user may not receive replies under ${refused}: connect with inboxPrefix: "_INBOX_<user>", e.g. connect({ servers, user, pass, inboxPrefix: "_INBOX_<user>" }), or pass new LeaseholdClient(nc, { inboxPrefix }); users of leasehold nats-config receive replies only there)`;
}

/** A request that got no answer from the service (no responder, connection closed, timeout). */
export class LeaseholdTransportError extends Error {
  override readonly name: string = "LeaseholdTransportError";

  constructor(
    message: string,
    /** The subject the request went to. */
    readonly subject: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }

  /** True when nobody listens on the subject (no service runs with this prefix). */
  get noResponders(): boolean {
    const cause = this.cause as { isNoResponders?: () => boolean; name?: string } | undefined;
    return cause?.isNoResponders?.() === true || cause?.name === "NoRespondersError";
  }
}

/** No reply within the timeout, after the one retry; whether the command took effect is unknown (repeat it with the same requestId to find out). */
export class LeaseholdTimeoutError extends LeaseholdTransportError {
  override readonly name = "LeaseholdTimeoutError";

  constructor(
    subject: string,
    /** Per-attempt timeout. */
    readonly timeoutMs: number,
    /** Attempts made. */
    readonly attempts: number,
    /** The requestId the attempts carried, when the request had one. */
    readonly requestId: string | undefined,
    options?: ErrorOptions,
  ) {
    super(`no reply on ${subject} within ${timeoutMs} ms (${attempts} attempt${attempts === 1 ? "" : "s"})`, subject, options);
  }
}

/** Builds the contract error a failure reply describes (the right subclass, with its details). */
export function errorFromReply(status: number, headerMessage: string | undefined, body: unknown, subject?: string): LeaseholdError {
  const error = (typeof body === "object" && body !== null ? (body as { error?: unknown }).error : undefined) as
    Record<string, unknown> | undefined;
  const code = typeof error?.code === "string" ? error.code : "UNKNOWN";
  const message = typeof error?.message === "string" ? error.message : (headerMessage ?? `service error ${status}`);
  const details: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error ?? {})) if (key !== "code" && key !== "message") details[key] = value;
  const init: LeaseholdErrorInit = subject === undefined ? { status, details } : { status, details, subject };
  const Class = Object.hasOwn(ERROR_CLASSES, code) ? ERROR_CLASSES[code as ErrorCode] : LeaseholdError;
  return new Class(code, message, init);
}

/** Decodes a reply message: the success body, or throws the contract error it carries. */
export function decodeReply<T>(msg: Pick<Msg, "data" | "headers">, subject?: string): T {
  const statusHeader = msg.headers?.get(ERROR_STATUS_HEADER);
  let body: unknown;
  try {
    body = msg.data.length === 0 ? {} : JSON.parse(new TextDecoder().decode(msg.data));
  } catch (e) {
    // Not our service's answer (or a broken one): report it as an error, never as a body.
    throw new LeaseholdError("MALFORMED_REPLY", `reply on ${subject ?? "?"} is not JSON: ${(e as Error).message}`, {
      status: statusHeader ? Number(statusHeader) : 502,
      ...(subject === undefined ? {} : { subject }),
      cause: e,
    });
  }
  if (statusHeader) throw errorFromReply(Number(statusHeader), msg.headers?.get(ERROR_MESSAGE_HEADER) || undefined, body, subject);
  return body as T;
}
