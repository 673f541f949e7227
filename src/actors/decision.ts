/**
 * What a decider answers: refuse (a contract error), reply without recording
 * anything, or record one event. Deciders are pure: state + command + now in,
 * decision out.
 */

/** The contract's error codes (PROTOCOL.md, "Error codes"), in precedence order. */
export const ERROR_CODES = [
  "BAD_REQUEST",
  "TTL_EXCEEDS_MAX",
  "CORRUPT",
  "UNKNOWN_LEASE",
  "UNKNOWN_PROXY",
  "UNKNOWN_HOST",
  "NO_MATCH",
  "LEASE_EXISTS",
  "NOT_HELD",
  "ALREADY_RELEASED",
  "NO_HOST",
  "PINNED_DOWN",
  "UNAVAILABLE",
] as const;

/** One of the contract's error codes. */
export type ErrorCode = (typeof ERROR_CODES)[number];

/** A refusal the client is told about; `details` are merged into the error body. */
export interface Rejection {
  readonly code: ErrorCode;
  readonly message: string;
  readonly details?: Readonly<Record<string, unknown>>;
}

/** A decider's answer to one command. */
export type Decision<Reply = unknown> =
  | { readonly outcome: "reject"; readonly rejection: Rejection }
  | { readonly outcome: "reply"; readonly reply: Reply }
  | { readonly outcome: "append"; readonly type: string; readonly data: Readonly<Record<string, unknown>> };

/** Builds a rejection decision. */
export function reject(code: ErrorCode, message: string, details?: Record<string, unknown>): Decision<never> {
  return { outcome: "reject", rejection: details === undefined ? { code, message } : { code, message, details } };
}

/** Builds a reply-only decision (nothing is recorded). */
export function replyOnly<R>(reply: R): Decision<R> {
  return { outcome: "reply", reply };
}

/** Builds a decision to record one event. */
export function record(type: string, data: Record<string, unknown>): Decision<never> {
  return { outcome: "append", type, data };
}
