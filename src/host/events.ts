/** Host events (docs/protocol.md, "The event stream") and the schemas their `data` must satisfy when read back. */
import { z } from "zod";
import type { EventEnvelope } from "../events/envelope.ts";
import { isEventOf, type EventOf, type EventSchemas, type EventsOf } from "../events/kind-events.ts";

/** `data` schemas of every host event, by type. */
export const hostEventSchemas = {
  // `maxLeases` is a 1.1 addition: absent in older events, read as null (no limit).
  HostStateSet: z.object({ healthy: z.boolean(), draining: z.boolean(), maxLeases: z.number().int().nonnegative().nullable().optional() }),
  HostLeaseAdmitted: z.object({
    route: z.string().min(1),
    fp: z.string(),
    model: z.string(),
    routeSeq: z.number().int().nonnegative(),
    closed: z.array(z.number().int().positive()),
  }),
} satisfies EventSchemas;

type HostEvents = EventsOf<typeof hostEventSchemas>;

/** An operator or health checker set the host's health and draining flags. */
export type HostStateSet = HostEvents["HostStateSet"];
/**
 * A capped host let one new route lease in (docs/routes.md, "Host capacity"):
 * the lease of `(route, fp, model)` may be placed on the host, as the route's
 * next event after `routeSeq` and nowhere else. `closed` lists the earlier
 * admissions (by stream sequence) known to be settled, placed or not.
 */
export type HostLeaseAdmitted = HostEvents["HostLeaseAdmitted"];
/** Any host event. */
export type HostEvent = EventOf<typeof hostEventSchemas>;

/** Narrows an event read back to the host events (see {@link isEventOf}). */
export function isHostEvent(event: EventEnvelope): event is HostEvent {
  return isEventOf(hostEventSchemas, event);
}
