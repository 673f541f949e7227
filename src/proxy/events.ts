/**
 * Proxy events (docs/protocol.md, "The event stream" and "Proxies") and the
 * schemas their `data` must satisfy when read back.
 */
import { z } from "zod";
import type { EventEnvelope } from "../events/envelope.ts";
import { isEventOf, type EventOf, type EventSchemas, type EventsOf } from "../events/kind-events.ts";
import { count, instant, positiveInt } from "../events/fields.ts";

/** The acquisition statistics of docs/protocol.md (`stats`), as a grant records them. */
export const proxyStatsSchema = z.object({ considered: count, unhealthy: count, inCooldown: count, atCapacity: count });

/** `data` schemas of every proxy event, by type. */
export const proxyEventSchemas = {
  ProxyRegistered: z.object({
    maxLeases: count,
    latencyMs: count,
    labels: z.record(z.string(), z.string()),
    healthy: z.boolean(),
  }),
  ProxyRemoved: z.object({}),
  ProxyLeaseGranted: z.object({
    leaseId: z.string().min(1),
    target: z.string(),
    ttlMs: positiveInt,
    expiresAt: instant,
    // Not required by the contract; kept so a repeated requestId gets the first answer back.
    stats: proxyStatsSchema.optional(),
  }),
  ProxyLeaseReleased: z.object({ leaseId: z.string().min(1) }),
  ProxyCooldownStarted: z.object({
    leaseId: z.string().min(1),
    result: z.enum(["rate_limited", "banned"]),
    target: z.string(),
    untilAt: instant,
    // 1.1 (backoff): the cooldown's length and its place in the pair's streak; absent in v1 events (length cooldownMs, streak 1).
    cooldownMs: positiveInt.optional(),
    streak: positiveInt.optional(),
  }),
} satisfies EventSchemas;

type ProxyEvents = EventsOf<typeof proxyEventSchemas>;

/** `stats` of an acquisition: considered, and how many of those were unhealthy, cooling down or full. */
export type ProxyStats = z.infer<typeof proxyStatsSchema>;

/** A proxy was registered, or its registration replaced (capacity, latency, labels, health). */
export type ProxyRegistered = ProxyEvents["ProxyRegistered"];
/** A proxy was taken out of selection; its leases and cooldowns stay. */
export type ProxyRemoved = ProxyEvents["ProxyRemoved"];
/** A lease on the proxy was granted for `target` until `expiresAt`. */
export type ProxyLeaseGranted = ProxyEvents["ProxyLeaseGranted"];
/** A lease was given back before its expiry (or after it, within retention). */
export type ProxyLeaseReleased = ProxyEvents["ProxyLeaseReleased"];
/** A report put the (proxy, target) pair in cooldown until `untilAt` (`target: ""` = global). */
export type ProxyCooldownStarted = ProxyEvents["ProxyCooldownStarted"];
/** Any proxy event. */
export type ProxyEvent = EventOf<typeof proxyEventSchemas>;

/** Narrows an event read back to the proxy events (see {@link isEventOf}). */
export function isProxyEvent(event: EventEnvelope): event is ProxyEvent {
  return isEventOf(proxyEventSchemas, event);
}
