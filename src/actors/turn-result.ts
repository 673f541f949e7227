/**
 * How a turn ends: a reply, a contract refusal, or — retryable — the event
 * stream could not be used in time. The last one is told apart from a
 * refusal by `unavailable`, which carries how soon a retry makes sense; the
 * wire sees it as the contract's `UNAVAILABLE`, and the durable command
 * consumer naks with that delay.
 */
import type { Rejection } from "../contract/errors.ts";

/** Why a turn could not finish, and when to try again. */
export interface Unavailable {
  readonly cause: string;
  readonly retryAfterMs: number;
}

/** How a turn ended. */
export type TurnResult =
  | { readonly ok: true; readonly reply: unknown }
  | { readonly ok: false; readonly rejection: Rejection; readonly unavailable?: Unavailable };

/** The retryable outcome: nothing was changed, or the change could not be confirmed in time. */
export function unavailable(cause: string, retryAfterMs: number): TurnResult {
  return {
    ok: false,
    rejection: { code: "UNAVAILABLE", message: `the event stream could not be used in time: ${cause}` },
    unavailable: { cause, retryAfterMs },
  };
}

/** How soon a client may retry after a read of the stream failed. */
const READ_RETRY_AFTER_MS = 500;

/**
 * The retryable outcome for a step that threw: a read of the stream that
 * failed or missed its deadline (the only way code below the api throws).
 */
export function unavailableAfter(error: unknown): TurnResult {
  return unavailable(error instanceof Error ? error.message : String(error), READ_RETRY_AFTER_MS);
}

/** Is `result` the retryable outcome (whoever built it)? */
export function isUnavailable(result: TurnResult): boolean {
  return !result.ok && result.rejection.code === "UNAVAILABLE";
}
