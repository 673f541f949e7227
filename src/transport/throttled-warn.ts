/**
 * A warning that an outage or a flood could repeat thousands of times a
 * second (UNAVAILABLE answers, refused reply subjects, requests shed for
 * load): logged at most once per `periodMs`, the next line counting the
 * ones left out (`suppressedSinceLast`), so that the log stays readable.
 */
import type { Logger } from "pino";

/** A warn line `msg` with the fields of each call, at most once per `periodMs`. */
export function throttledWarn(logger: Logger, msg: string, periodMs: number): (fields: Record<string, unknown>) => void {
  let lastAt = -Infinity;
  let suppressed = 0;
  return (fields) => {
    const now = performance.now();
    if (now - lastAt < periodMs) {
      suppressed++;
      return;
    }
    logger.warn({ ...fields, suppressedSinceLast: suppressed }, msg);
    lastAt = now;
    suppressed = 0;
  };
}
