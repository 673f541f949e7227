/**
 * The error half of the wire contract: every code's HTTP-like status and the
 * shape of a failure (`Nats-Service-Error-Code`/`Nats-Service-Error` headers
 * and a `{"error": {...}}` body).
 */
import type { ErrorCode, Rejection } from "../actors/decision.ts";

/** HTTP-like status of each contract code (docs/protocol.md, "Error codes"). */
export const STATUS: Readonly<Record<ErrorCode, number>> = {
  BAD_REQUEST: 400,
  TTL_EXCEEDS_MAX: 400,
  UNKNOWN_LEASE: 404,
  UNKNOWN_PROXY: 404,
  UNKNOWN_HOST: 404,
  NO_MATCH: 409,
  LEASE_EXISTS: 409,
  NOT_HELD: 409,
  ALREADY_RELEASED: 410,
  CORRUPT: 500,
  NO_HOST: 503,
  PINNED_DOWN: 503,
  UNAVAILABLE: 503,
};

/** The JSON body of a failure. */
export function errorBody(rejection: Rejection): { error: Record<string, unknown> } {
  return { error: { code: rejection.code, message: rejection.message, ...rejection.details } };
}

/** A request that breaks the contract's input rules. */
export function badRequest(message: string): Rejection {
  return { code: "BAD_REQUEST", message };
}
