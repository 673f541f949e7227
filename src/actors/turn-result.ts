/**
 * How a turn ends: a reply, a contract refusal, or — retryable — the event
 * stream could not be used in time. The last one is told apart from a
 * refusal by `unavailable`, which carries how soon a retry makes sense; the
 * wire sees it as the contract's `UNAVAILABLE`, and the durable command
 * consumer naks with that delay. When the turn's own event may still be
 * stored, it is marked in doubt and a request gets no answer at all.
 */
import type { Rejection } from "../contract/errors.ts";

/** Why a turn could not finish, and when to try again. */
export interface Unavailable {
  readonly cause: string;
  readonly retryAfterMs: number;
  /**
   * The turn's own event may still be stored (src/actors/append-doubt.ts):
   * the contract's `UNAVAILABLE` ("nothing was changed") would not be true,
   * so a request gets no answer and its client's timeout stands for "not
   * known"; a retry with the same requestId learns the outcome.
   */
  readonly inDoubt?: true;
}

/** How a turn ended. */
export type TurnResult =
  | { readonly ok: true; readonly reply: unknown }
  | { readonly ok: false; readonly rejection: Rejection; readonly unavailable?: Unavailable };

/** The retryable outcome: nothing was changed (see {@link inDoubt} for when that is not known). */
export function unavailable(cause: string, retryAfterMs: number): TurnResult {
  return {
    ok: false,
    rejection: { code: "UNAVAILABLE", message: `the event stream could not be used in time: ${cause}` },
    unavailable: { cause, retryAfterMs },
  };
}

/** The outcome when the turn's own event may still be stored: not to be answered as "nothing was changed". */
export function inDoubt(cause: string, retryAfterMs: number): TurnResult {
  return {
    ok: false,
    rejection: { code: "UNAVAILABLE", message: `the outcome is not known: ${cause}; retry with the same requestId` },
    unavailable: { cause, retryAfterMs, inDoubt: true },
  };
}

/** Is `result` a turn whose own event may still be stored? */
export function isInDoubt(result: TurnResult): boolean {
  return !result.ok && result.unavailable?.inDoubt === true;
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
