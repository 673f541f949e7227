/**
 * The one way a request becomes a turn: an endpoint validates its body
 * against its schema, hands the typed request to its handler, and answers
 * with the handler's result. A handler that throws (a read of the stream that
 * failed) is answered `UNAVAILABLE`; nothing else escapes.
 */
import type { z } from "zod";
import type { Arrival } from "../actors/actor-runtime.ts";
import type { Rejection } from "../contract/errors.ts";
import { unavailableAfter, type TurnResult } from "../actors/turn-result.ts";
import { badRequest, forbidden } from "../contract/errors.ts";
import { parseBody, parseRequest, requestId, validate } from "./validation.ts";
import { requestFingerprint } from "./request-fingerprint.ts";

/** One `<kind>.<op>` endpoint, ready to serve. */
export interface Endpoint {
  readonly kind: string;
  readonly op: string;
  /** Answers from state without changing it: served on request only, never as a durable command. */
  readonly reads: boolean;
  /** An operator op (docs/protocol.md, "Principals"): with `--operators`, only those principals may call it. */
  readonly operatorOp: boolean;
  /**
   * Runs a raw request body; never throws. The handler starts before this
   * returns (no await in between), so requests that reach an actor enter its
   * mailbox in the order they arrived.
   */
  run(data: Uint8Array, delivery?: Delivery): Promise<TurnResult>;
}

/** How a request was delivered. */
export interface Delivery {
  /** Set on durable commands only: when the command was first sent (epoch ms). Such a command must carry a `requestId`. */
  readonly requestedAt?: number;
  /** Who sent it, as NATS says (src/transport/principals.ts); `""` or absent: unknown. */
  readonly principal?: string;
  /** Whether the principal is an operator (`--operators` lists it): it may act on any holder's lease. */
  readonly operator?: boolean;
  /** Whether the principal may call operator ops: an operator, or anyone while `--operators` is unset (default true). */
  readonly mayOperate?: boolean;
}

/** Marks an endpoint that only reads. */
export const READS = { reads: true } as const;
/** Marks an op only `--operators` may call when it is set (docs/protocol.md, "Principals"). */
export const OPERATOR_OP = { operatorOp: true } as const;

/** What a handler does with a valid request. */
export type Handler<Req> = (request: Req, arrival: Arrival) => Promise<TurnResult>;

/** Builds an endpoint; `reads` marks one that only reads. */
export function endpoint<Req extends { requestId?: string | undefined }>(
  kind: string,
  op: string,
  schema: z.ZodType<Req>,
  handle: Handler<Req>,
  options: { reads?: boolean; operatorOp?: boolean } = {},
): Endpoint {
  const operatorOp = options.operatorOp ?? false;
  return {
    kind,
    op,
    reads: options.reads ?? false,
    operatorOp,
    run(data, delivery) {
      const request = delivery?.requestedAt === undefined ? parseRequest(schema, data) : parseDurable(schema, data);
      if (!request.ok) return Promise.resolve({ ok: false, rejection: request.rejection });
      const { requestId } = request.value;
      const principal = delivery?.principal ?? "";
      if (operatorOp && delivery?.mayOperate === false) return refuse(forbidden(`${kind}.${op} is an operator op`, principal));
      const arrival: Arrival = {
        requestId,
        requestedAt: delivery?.requestedAt,
        principal,
        operator: delivery?.operator ?? false,
        // Only a request that can be repeated needs telling from another with its id.
        fingerprint: requestId === undefined ? undefined : requestFingerprint(kind, op, request.value, principal),
      };
      try {
        return handle(request.value, arrival).catch(unavailableAfter);
      } catch (e) {
        return Promise.resolve(unavailableAfter(e));
      }
    },
  };
}

/**
 * A durable command's body, parsed once: a `requestId` is checked before the
 * schema, since without one a redelivery could not be told from a new command.
 */
function parseDurable<Req>(schema: z.ZodType<Req>, data: Uint8Array): ReturnType<typeof parseRequest<Req>> {
  const body = parseBody(data);
  if (!body.ok) return body;
  if (!requestId.safeParse(body.value.requestId).success) {
    return { ok: false, rejection: badRequest("requestId: required on durable commands (a string of 1 to 128 characters)") };
  }
  return validate(schema, body.value);
}

/** A refusal, as a handler answers it. */
export function refuse(rejection: Rejection): Promise<TurnResult> {
  return Promise.resolve({ ok: false, rejection });
}

/** A successful result carrying `reply`. */
export function answer(reply: unknown): TurnResult {
  return { ok: true, reply };
}
