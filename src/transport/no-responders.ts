/** Telling "nobody listens on this subject" apart from "nobody answered in time" in a NATS request's failure. */
import { errors } from "@nats-io/nats-core";

/** Whether a request failed at once because no one subscribes to its subject (the server said so), not by its timeout. */
export function isNoResponders(e: unknown): boolean {
  if (e instanceof errors.NoRespondersError) return true;
  if (e instanceof errors.RequestError && e.isNoResponders()) return true;
  return (e as { cause?: unknown }).cause instanceof errors.NoRespondersError;
}
