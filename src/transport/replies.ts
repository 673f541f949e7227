/**
 * The one mapping of a turn's result onto the wire: the success body, or the
 * contract's error body with its status and message, which are also sent as
 * the `Nats-Service-Error-Code` and `Nats-Service-Error` headers.
 */
import { headers as natsHeaders, type MsgHdrs } from "@nats-io/nats-core";
import { ERROR_MESSAGE_HEADER, ERROR_STATUS_HEADER, STATUS, errorBody } from "../contract/errors.ts";
import type { TurnResult } from "../actors/turn-result.ts";

/**
 * What an endpoint answers, in wire terms. `inDoubt` marks an answer that
 * must not be sent: the command's event may still be stored, and the only
 * code the contract has for a failed write says nothing was changed.
 */
export type EndpointResponse =
  | { readonly ok: true; readonly body: unknown }
  | { readonly ok: false; readonly status: number; readonly message: string; readonly body: unknown; readonly inDoubt?: true };

/** The wire form of a turn's result. */
export function toResponse(result: TurnResult): EndpointResponse {
  if (result.ok) return { ok: true, body: result.reply };
  // A message may echo input (a JSON parse error quotes one UTF-16 unit, maybe half a pair): made well-formed
  // so that the header, which is UTF-8, says exactly what `error.message` says.
  const rejection = { ...result.rejection, message: result.rejection.message.toWellFormed() };
  const response = { ok: false, status: STATUS[rejection.code], message: rejection.message, body: errorBody(rejection) } as const;
  return result.unavailable?.inDoubt === true ? { ...response, inDoubt: true } : response;
}

/** Headers of a reply: the error headers for a failure (added to `into` when given), none for a success. */
export function replyHeaders(response: EndpointResponse, into?: MsgHdrs): MsgHdrs | undefined {
  if (response.ok) return into;
  const h = into ?? natsHeaders();
  h.set(ERROR_STATUS_HEADER, String(response.status));
  // Header values are one line; the full text is in the body.
  h.set(ERROR_MESSAGE_HEADER, response.message.replace(/[\r\n]+/g, " "));
  return h;
}
