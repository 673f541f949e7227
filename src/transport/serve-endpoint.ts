/**
 * The one way in for every command, wherever it arrives: a request through
 * the service framework and a durable command from the command stream both
 * go through {@link endpointServer}, which runs the endpoint (validation once,
 * then the use case), counts the command, logs a refusal and maps the result
 * onto the wire.
 */
import type { Logger } from "pino";
import { isInDoubt, isUnavailable, type TurnResult } from "../actors/turn-result.ts";
import type { Delivery, Endpoint } from "./endpoint.ts";
import { toResponse, type EndpointResponse } from "./replies.ts";
import { Operators } from "../contract/operators.ts";
import { unauthenticated } from "../contract/errors.ts";

/** What a metrics registry takes from the commands served (prom-client's in src/http fits it). */
export interface CommandObserver {
  commandFinished(kind: string, op: string, outcome: string, seconds: number): void;
}

/** A command carried out: its result, and the same in wire terms. */
export interface Served {
  readonly result: TurnResult;
  readonly response: EndpointResponse;
}

/**
 * Serves one raw command body on `endpoint`; never throws. Like
 * {@link Endpoint.run}, the handler starts before the first await, so
 * commands reach each actor in the order they arrived.
 */
export type ServeEndpoint = (endpoint: Endpoint, data: Uint8Array, delivery?: Delivery) => Promise<Served>;

/** Settings of {@link endpointServer}. */
export interface EndpointServerOptions {
  readonly logger: Logger;
  readonly observer?: CommandObserver | undefined;
  /** Fewest milliseconds between two warnings of UNAVAILABLE answers (default 5000). */
  readonly unavailableLogPeriodMs?: number;
  /** `--operators` (default: none, so anyone may call operator ops). */
  readonly operators?: Operators;
  /** `--require-principal`: a request whose principal is unknown is refused UNAUTHENTICATED before anything else. */
  readonly requirePrincipal?: boolean;
}

/** The serve function of one service instance (its UNAVAILABLE warnings are throttled together). */
export function endpointServer(options: EndpointServerOptions): ServeEndpoint {
  const { logger, observer, unavailableLogPeriodMs = 5000, requirePrincipal = false } = options;
  const operators = options.operators ?? new Operators([]);
  const warnUnavailable = throttledWarn(logger, "answered UNAVAILABLE", unavailableLogPeriodMs);
  const warnInDoubt = throttledWarn(logger, "left unanswered: the command's event may still be stored", unavailableLogPeriodMs);
  return async (endpoint, data, delivery = {}) => {
    const started = performance.now();
    const principal = delivery.principal ?? "";
    const operator = operators.includes(principal);
    const result: TurnResult =
      requirePrincipal && principal === ""
        ? { ok: false, rejection: unauthenticated() }
        : await endpoint.run(data, { requestedAt: delivery.requestedAt, principal, operator, mayOperate: operator || operators.open });
    observer?.commandFinished(endpoint.kind, endpoint.op, outcomeOf(result), (performance.now() - started) / 1000);
    if (!result.ok && isInDoubt(result)) warnInDoubt(endpoint.kind, endpoint.op, result.rejection.message);
    else if (!result.ok && isUnavailable(result)) warnUnavailable(endpoint.kind, endpoint.op, result.rejection.message);
    else if (!result.ok) {
      logger.debug(
        { kind: endpoint.kind, op: endpoint.op, code: result.rejection.code, message: result.rejection.message },
        "command refused",
      );
    }
    return { result, response: toResponse(result) };
  };
}

/** The `outcome` of a command for metrics: `ok`, its error code, or `unavailable`. */
export function outcomeOf(result: TurnResult): string {
  if (result.ok) return "ok";
  return isUnavailable(result) ? "unavailable" : result.rejection.code;
}

/**
 * Logs an UNAVAILABLE answer at warn so an operator sees an outage and its
 * cause, but at most once per `periodMs`: the next line counts the ones
 * left out (an outage at thousands of requests a second must not flood the log).
 */
function throttledWarn(logger: Logger, msg: string, periodMs: number): (kind: string, op: string, message: string) => void {
  let lastAt = -Infinity;
  let suppressed = 0;
  return (kind, op, message) => {
    const now = performance.now();
    if (now - lastAt < periodMs) {
      suppressed++;
      return;
    }
    logger.warn({ kind, op, cause: message, suppressedSinceLast: suppressed }, msg);
    lastAt = now;
    suppressed = 0;
  };
}
