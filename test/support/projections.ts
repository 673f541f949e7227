/** A kind's projection on its own (no runtime), for read-model tests. */
import { pino } from "pino";
import type { EventLog, Subjects } from "../../src/events/index.ts";
import { KindProjection, type KindFold } from "../../src/projections/index.ts";

/** A projection of `fold`'s kind over `log`, not started. */
export function projectionOf<S>(log: EventLog, subjects: Subjects, fold: KindFold<S>): KindProjection<S> {
  return new KindProjection({ log, filter: subjects.eventsOfKind(fold.kind), fold, logger: pino({ level: "silent" }) });
}
