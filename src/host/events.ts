/** Host events (docs/protocol.md, "The event stream") and the schemas their `data` must satisfy when read back. */
import { z } from "zod";
import type { EventEnvelope } from "../events/envelope.ts";

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
} satisfies Record<string, z.ZodType>;

type Data<T extends keyof typeof hostEventSchemas> = z.infer<(typeof hostEventSchemas)[T]>;

/** An operator or health checker set the host's health and draining flags. */
export type HostStateSet = EventEnvelope<"HostStateSet", Data<"HostStateSet">>;
/**
 * A capped host let one new route lease in (docs/routes.md, "Host capacity"):
 * the lease of `(route, fp, model)` may be placed on the host, as the route's
 * next event after `routeSeq` and nowhere else. `closed` lists the earlier
 * admissions (by stream sequence) known to be settled, placed or not.
 */
export type HostLeaseAdmitted = EventEnvelope<"HostLeaseAdmitted", Data<"HostLeaseAdmitted">>;
/** Any host event. */
export type HostEvent = HostStateSet | HostLeaseAdmitted;

/**
 * Narrows an event read back to the host events: its type is one a host
 * writes (and {@link decodeEvent} checked its data against that type's schema).
 */
export function isHostEvent(event: EventEnvelope): event is HostEvent {
  return Object.hasOwn(hostEventSchemas, event.type);
}
