/**
 * A delivered message's stored instant in whole milliseconds, exactly (the
 * BigInt nanoseconds divided by 10^6), but from the number the client has
 * already parsed for every message (`info.timestampNanos`), so neither the
 * event log's readers nor the tools' read parse the reply subject a second
 * time per message.
 *
 * That number is the nanoseconds rounded to a double (to within 128 ns at
 * today's instants), so dividing it can land on the wrong side of a
 * millisecond only when the true instant is within a few hundred
 * nanoseconds of one; then, and only then (about 1 message in 250), the
 * exact BigInt is read.
 */
import type { JsMsg } from "@nats-io/jetstream";

/** How close to a millisecond boundary (ns) the double's quotient is not trusted: well beyond its error of a few hundred. */
const UNSURE_NS = 2000;

/** `m`'s stored instant, epoch ms, rounded down. */
export function storedMillis(m: Pick<JsMsg, "info" | "timestampNanos">): number {
  const nanos = m.info.timestampNanos;
  const ms = Math.floor(nanos / 1e6);
  const within = nanos - ms * 1e6;
  if (within >= UNSURE_NS && within <= 1e6 - UNSURE_NS) return ms;
  return Number(m.timestampNanos / 1_000_000n);
}
