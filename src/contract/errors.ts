/**
 * The error half of the wire contract, shared by the server's api and the
 * client: every code in precedence order, its HTTP-like status, and the
 * shape of a failure (`{"error": {code, message, ...details}}`, with the
 * status and message also in the `Nats-Service-Error-Code` and
 * `Nats-Service-Error` headers).
 */

/** The contract's error codes (docs/protocol.md, "Error codes"), in precedence order. */
export const ERROR_CODES = [
  "UNAUTHENTICATED",
  "BAD_REQUEST",
  "REQUEST_ID_REUSED",
  "TTL_EXCEEDS_MAX",
  // An operator op's refusal comes here; a holder-bound op's comes first among the state checks below.
  "FORBIDDEN",
  "CORRUPT",
  "UNKNOWN_LEASE",
  "UNKNOWN_PROXY",
  "UNKNOWN_HOST",
  "NO_SESSION",
  "NO_MATCH",
  "LEASE_EXISTS",
  "NOT_HELD",
  "ALREADY_RELEASED",
  "NO_HOST",
  "PINNED_DOWN",
  "TOO_MANY_WAITERS",
  "UNAVAILABLE",
] as const;

/** One of the contract's error codes. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** HTTP-like status of each contract code. */
export const STATUS: Readonly<Record<ErrorCode, number>> = {
  UNAUTHENTICATED: 401,
  BAD_REQUEST: 400,
  REQUEST_ID_REUSED: 422,
  FORBIDDEN: 403,
  TOO_MANY_WAITERS: 429,
  TTL_EXCEEDS_MAX: 400,
  UNKNOWN_LEASE: 404,
  UNKNOWN_PROXY: 404,
  UNKNOWN_HOST: 404,
  NO_SESSION: 404,
  NO_MATCH: 409,
  LEASE_EXISTS: 409,
  NOT_HELD: 409,
  ALREADY_RELEASED: 410,
  CORRUPT: 500,
  NO_HOST: 503,
  PINNED_DOWN: 503,
  UNAVAILABLE: 503,
};

/** A refusal the client is told about; `details` are merged into the error body. */
export interface Rejection {
  readonly code: ErrorCode;
  readonly message: string;
  readonly details?: Readonly<Record<string, unknown>>;
}

/** The JSON body of a failure. */
export interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly [detail: string]: unknown };
}

/** The JSON body of a refusal. */
export function errorBody(rejection: Rejection): ErrorBody {
  return { error: { code: rejection.code, message: rejection.message, ...rejection.details } };
}

/** A request that breaks the contract's input rules. */
export function badRequest(message: string): Rejection {
  return { code: "BAD_REQUEST", message };
}

/** FORBIDDEN: `principal` may not do what it asked (`what` says why). */
export function forbidden(what: string, principal: string): Rejection {
  const who = principal === "" ? "an unknown principal" : principal;
  return { code: "FORBIDDEN", message: `${what}, and ${who} may not do it`, details: { principal } };
}

/** UNAUTHENTICATED: the service requires a principal and NATS named none. */
export function unauthenticated(): Rejection {
  return {
    code: "UNAUTHENTICATED",
    message: "this service requires a principal (--require-principal) and NATS named none: send through the account layout's import",
  };
}

/** Header carrying a failure's status. */
export const ERROR_STATUS_HEADER = "Nats-Service-Error-Code";
/** Header carrying a failure's message (one line). */
export const ERROR_MESSAGE_HEADER = "Nats-Service-Error";
