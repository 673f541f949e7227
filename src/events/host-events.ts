/** Host events (docs/protocol.md, "The event stream") and the schemas their `data` must satisfy when read back. */
import { z } from "zod";
import type { EventEnvelope } from "./envelope.ts";

/** `data` schemas of every host event, by type. */
export const hostEventSchemas = {
  HostStateSet: z.object({ healthy: z.boolean(), draining: z.boolean() }),
} satisfies Record<string, z.ZodType>;

type Data<T extends keyof typeof hostEventSchemas> = z.infer<(typeof hostEventSchemas)[T]>;

/** An operator or health checker set the host's health and draining flags. */
export type HostStateSet = EventEnvelope<"HostStateSet", Data<"HostStateSet">>;
/** Any host event. */
export type HostEvent = HostStateSet;

/**
 * Narrows an event read back to the host events: its type is one a host
 * writes (and {@link decodeEvent} checked its data against that type's schema).
 */
export function isHostEvent(event: EventEnvelope): event is HostEvent {
  return Object.hasOwn(hostEventSchemas, event.type);
}
