/**
 * A command endpoint: validates a request body against its schema, hands the
 * typed command to the actor that owns it, and maps the turn's result onto
 * the wire (success body, or the contract's error headers and body).
 */
import type { z } from "zod";
import type { ActorKind } from "../events/index.ts";
import type { ActorHost, Command, TurnResult } from "../actors/index.ts";
import type { EndpointResponse } from "./micro-service.ts";
import { errorBody, STATUS } from "./errors.ts";
import { parseRequest } from "./validation.ts";

/** One `<kind>.<op>` endpoint. */
export interface CommandEndpoint {
  readonly kind: string;
  readonly op: string;
  /** Runs a raw request body; never throws. */
  run(data: Uint8Array, options?: RunOptions): Promise<TurnResult>;
}

/** How a command arrived. */
export interface RunOptions {
  /** Durable commands: when the command was first sent (epoch ms). */
  readonly requestedAt?: number;
}

/** Which actor a valid request goes to, and the command it becomes. */
export type Route<Req> = (request: Req) => { readonly kind: ActorKind; readonly id: string; readonly command: Command };

/** Builds an endpoint whose requests each go to a single actor. */
export function actorEndpoint<Req extends { requestId?: string | undefined }>(
  host: ActorHost,
  kind: string,
  op: string,
  schema: z.ZodType<Req>,
  route: Route<Req>,
): CommandEndpoint {
  return {
    kind,
    op,
    run(data, options) {
      const request = parseRequest(schema, data);
      if (!request.ok) return Promise.resolve({ ok: false, rejection: request.rejection });
      const target = route(request.value);
      return host.execute(target.kind, target.id, target.command, request.value.requestId, options?.requestedAt);
    },
  };
}

/** The wire form of a turn's result. */
export function toResponse(result: TurnResult): EndpointResponse {
  if (result.ok) return { ok: true, body: result.reply };
  // A message may echo input (a JSON parse error quotes one UTF-16 unit, maybe half a pair): made well-formed
  // so that the header, which is UTF-8, says exactly what `error.message` says.
  const rejection = { ...result.rejection, message: result.rejection.message.toWellFormed() };
  return { ok: false, status: STATUS[rejection.code], message: rejection.message, body: errorBody(rejection) };
}
