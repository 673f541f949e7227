/**
 * What a decider answers: refuse (a contract error), reply without recording
 * anything, or record one event. Deciders are pure: state + command + now in,
 * decision out.
 */
import type { ErrorCode, Rejection } from "../contract/errors.ts";
import type { EventEnvelope } from "../events/envelope.ts";

/** A decision to record one event of the union `E`: its type and the data that type carries. */
export type Append<E extends EventEnvelope = EventEnvelope> = E extends EventEnvelope
  ? { readonly outcome: "append"; readonly type: E["type"]; readonly data: E["data"] }
  : never;

/** A decider's answer to one command; `E` is the kind's event union, so an event's fields are checked where it is decided. */
export type Decision<E extends EventEnvelope = EventEnvelope> =
  { readonly outcome: "reject"; readonly rejection: Rejection } | { readonly outcome: "reply"; readonly reply: unknown } | Append<E>;

/** Builds a rejection decision. */
export function reject(code: ErrorCode, message: string, details?: Record<string, unknown>): Decision<never> {
  return { outcome: "reject", rejection: details === undefined ? { code, message } : { code, message, details } };
}

/** Builds a reply-only decision (nothing is recorded). */
export function replyOnly(reply: unknown): Decision<never> {
  return { outcome: "reply", reply };
}

/**
 * A typed `record` for the event union `E`: `recorder<LockEvent>()("LockAcquired", data)`
 * only compiles when `data` is what a `LockAcquired` carries.
 */
export function recorder<E extends EventEnvelope>() {
  return <T extends E["type"]>(type: T, data: Extract<E, { readonly type: T }>["data"]): Decision<E> =>
    ({ outcome: "append", type, data }) as unknown as Append<E>;
}
