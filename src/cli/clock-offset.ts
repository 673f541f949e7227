/**
 * A test hook for clock skew: `LEASEHOLD_TEST_CLOCK_OFFSET_MS` moves the
 * service's clock (every expiry and `at` it decides) by that many
 * milliseconds from the machine's, so a drill can run instances whose
 * clocks disagree. Not a setting for production: it says nothing in
 * `--help`, and `serve` logs a warning when it is set.
 */
import { systemClock, type Clock } from "../actors/clock.ts";

/** The variable's name. */
export const CLOCK_OFFSET_VARIABLE = "LEASEHOLD_TEST_CLOCK_OFFSET_MS";

/** The offset the environment asks for (0 when unset); throws a one-line error for anything but an integer. */
export function clockOffsetMs(env: NodeJS.ProcessEnv = process.env): number {
  const value = env[CLOCK_OFFSET_VARIABLE];
  if (value === undefined || value === "") return 0;
  const ms = Number(value);
  if (!Number.isSafeInteger(ms))
    throw new Error(`${CLOCK_OFFSET_VARIABLE}: expected an integer number of milliseconds, got ${JSON.stringify(value)}`);
  return ms;
}

/** The machine's clock moved by `offsetMs` (the machine's own clock when 0). */
export function offsetClock(offsetMs: number): Clock {
  return offsetMs === 0 ? systemClock : { now: () => Date.now() + offsetMs };
}
