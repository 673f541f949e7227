/**
 * Ready-made ways for the runtime to report to {@link ServiceMetrics}
 * without threading the metrics through every call: time every append of an
 * event log (and count the expected-sequence conflicts), and time a command
 * handler by its outcome.
 */
import { WrongLastSequenceError, type EventLog } from "../events/index.ts";
import { commandOutcome, type ServiceMetrics } from "./metrics.ts";

/**
 * Makes every `log.append` report its duration and, when it loses the
 * expected-last-subject-sequence check, a conflict. Patches `log` in place,
 * so whoever already holds it (the actor host) is metered too; returns it.
 */
export function meterAppends<L extends EventLog>(log: L, metrics: ServiceMetrics): L {
  const append = log.append.bind(log);
  log.append = async (subject, payload, options) => {
    const start = process.hrtime.bigint();
    try {
      return await append(subject, payload, options);
    } catch (e) {
      if (e instanceof WrongLastSequenceError) metrics.appendConflict();
      throw e;
    } finally {
      metrics.appendFinished(Number(process.hrtime.bigint() - start) / 1e9);
    }
  };
  return log;
}

/** A command's result as the handlers return it. */
type Outcome = { readonly ok: true } | { readonly ok: false; readonly rejection: { readonly code: string } };

/** Wraps a command handler so that each call reports `kind`, `op`, its outcome and duration. */
export function meterCommand<A extends unknown[], R extends Outcome>(
  metrics: ServiceMetrics,
  kind: string,
  op: string,
  run: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return async (...args) => {
    const start = process.hrtime.bigint();
    try {
      const result = await run(...args);
      metrics.commandFinished(kind, op, commandOutcome(result), Number(process.hrtime.bigint() - start) / 1e9);
      return result;
    } catch (e) {
      // A handler that throws is answered as a failure upstream; count it as such.
      metrics.commandFinished(kind, op, "INTERNAL", Number(process.hrtime.bigint() - start) / 1e9);
      throw e;
    }
  };
}
