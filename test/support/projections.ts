/** A kind's projection on its own (no runtime), for read-model tests. */
import { pino } from "pino";
import type { EventLog, Following } from "../../src/events/event-log.ts";
import type { Subjects } from "../../src/contract/subjects.ts";
import { KindProjection } from "../../src/projections/kind-projection.ts";
import { type KindFold } from "../../src/projections/kind-fold.ts";

/** A projection of `fold`'s kind over `log`, not started. */
export function projectionOf<S>(log: EventLog, subjects: Subjects, fold: KindFold<S>): KindProjection<S> {
  return new KindProjection({ log, filter: subjects.eventsOfKind(fold.kind), fold, logger: pino({ level: "silent" }) });
}

/**
 * `log` with its followers' "caught up?" answered by `caughtUp` (given the
 * follower's own answer, to pass on when the test has no say): a consumer
 * that is offline, slow, or whose answers are lost. Everything else is `log`'s.
 */
export function withCaughtUp<L extends EventLog>(log: L, caughtUp: (timeoutMs: number, own: Following["caughtUp"]) => Promise<boolean>): L {
  const follow: EventLog["follow"] = async (...args) => {
    const following = await log.follow(...args);
    return { ...following, caughtUp: (timeoutMs) => caughtUp(timeoutMs, (ms) => following.caughtUp(ms)) };
  };
  return Object.assign(Object.create(log) as L, { follow });
}
