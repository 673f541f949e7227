/**
 * Route events (docs/protocol.md, "The event stream" and "Routes") and the schemas
 * their `data` must satisfy when read back. Any route event may carry `seen`:
 * the hosts the command added to the route's seen set.
 */
import { z } from "zod";
import type { EventEnvelope } from "../events/envelope.ts";
import { isEventOf, type EventOf, type EventSchemas, type EventsOf } from "../events/kind-events.ts";

const host = z.string().min(1);
const seen = z.array(host).optional();
/** A lease named by its key within the route and the host it was on. */
const leaseRef = z.object({ fp: z.string(), model: z.string(), host });

/** Why a lease was placed: a fresh key, a replacement for a lease on an unhealthy host, or an operator's move. */
export const PLACEMENT_REASONS = ["new", "unhealthy", "ctx"] as const;
/** One of {@link PLACEMENT_REASONS}. */
export type PlacementReason = (typeof PLACEMENT_REASONS)[number];

/** `data` schemas of every route event, by type. */
export const routeEventSchemas = {
  RouteLeasePlaced: z.object({
    fp: z.string(),
    model: z.string(),
    host,
    from: z.string(),
    reason: z.enum(PLACEMENT_REASONS),
    reused: z.boolean(),
    seen,
    // Host capacity: the stream sequence of the HostLeaseAdmitted that let this lease onto a capped host.
    admission: z.number().int().positive().optional(),
    // 1.2: the chooser that decided a new placement (absent for pins, inherited hosts, moves, and in older events).
    chooser: z.string().min(1).optional(),
  }),
  RouteLeaseTouched: z.object({ fp: z.string(), model: z.string(), seen }),
  RouteLeaseExpired: z.object({ fp: z.string(), model: z.string(), host, seen }),
  RouteCandidatesSeen: z.object({ seen: z.array(host) }),
  RoutePinned: z.object({ host, displaced: z.array(leaseRef), seen }),
  RouteUnpinned: z.object({ seen }),
  RouteReleased: z.object({ released: z.array(leaseRef), seen }),
  RouteAdmissionLapsed: z.object({ host, admission: z.number().int().positive() }),
} satisfies EventSchemas;

type RouteEvents = EventsOf<typeof routeEventSchemas>;

/** A lease of `(fp, model)` now sits on `host` (`from` is the host it left, or `""`). */
export type RouteLeasePlaced = RouteEvents["RouteLeasePlaced"];
/** The lease of `(fp, model)` was used again (coalesced: at most `routeIdleMs / 100` stale). */
export type RouteLeaseTouched = RouteEvents["RouteLeaseTouched"];
/** The lease of `(fp, model)` idled out. */
export type RouteLeaseExpired = RouteEvents["RouteLeaseExpired"];
/** Hosts were added to the route's seen set and nothing else changed. */
export type RouteCandidatesSeen = RouteEvents["RouteCandidatesSeen"];
/** The route was pinned to `host`; its leases on other hosts were dropped. */
export type RoutePinned = RouteEvents["RoutePinned"];
/** The route's pin was removed; its leases stay. */
export type RouteUnpinned = RouteEvents["RouteUnpinned"];
/** Every lease of the route was dropped (the pin stays). */
export type RouteReleased = RouteEvents["RouteReleased"];
/**
 * A host admission for this route was never used and never will be: the
 * route's subject moved past the one position the admitted lease could take.
 * Changes nothing in the route; it settles the host's slot.
 */
export type RouteAdmissionLapsed = RouteEvents["RouteAdmissionLapsed"];
/** Any route event. */
export type RouteEvent = EventOf<typeof routeEventSchemas>;

/** Narrows an event read back to the route events (see {@link isEventOf}). */
export function isRouteEvent(event: EventEnvelope): event is RouteEvent {
  return isEventOf(routeEventSchemas, event);
}
