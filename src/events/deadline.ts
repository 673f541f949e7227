/**
 * Deadlines for waits on the log. A NATS call that does not answer must not
 * hold a turn, a shutdown or a follower forever: past its deadline the wait
 * ends with a {@link LogUnavailableError}, whatever the call does afterwards.
 */
import { LogUnavailableError } from "./event-log.ts";

/** Deadline of each call to the server outside a request (stream and bucket setup, follower looks), unless told otherwise. */
export const OP_TIMEOUT_MS = 5000;

/**
 * Resolves as `work` does, or rejects with a {@link LogUnavailableError} once
 * `timeoutMs` has passed. `ambiguous` says whether work that timed out may
 * still have taken effect (an append), which callers must not mistake for
 * "nothing happened".
 */
export function withDeadline<T>(work: Promise<T>, timeoutMs: number, what: string, ambiguous = false): Promise<T> {
  if (timeoutMs <= 0) {
    void work.catch(() => undefined);
    return Promise.reject(new LogUnavailableError(`${what}: no time left`, ambiguous));
  }
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new LogUnavailableError(`${what}: no answer within ${timeoutMs} ms`, ambiguous)), timeoutMs);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** Resolves after `ms` (an unref'd timer: it never keeps the process alive). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
