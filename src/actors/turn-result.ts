/**
 * How a turn ends: a reply, a contract refusal, or — retryable — the event
 * stream could not be used in time. The last one is told apart from a
 * refusal by `unavailable`, which carries how soon a retry makes sense; the
 * wire sees it as the contract's `UNAVAILABLE`, and the durable command
 * consumer naks with that delay.
 */
import type { Rejection } from "./decision.ts";

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

/** Is `result` the retryable outcome (whoever built it)? */
export function isUnavailable(result: TurnResult): boolean {
  return !result.ok && result.rejection.code === "UNAVAILABLE";
}
