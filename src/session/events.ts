/** Session events (docs/protocol.md, "Sessions") and the schemas their `data` must satisfy when read back. */
import { z } from "zod";
import type { EventEnvelope } from "../events/envelope.ts";
import { isEventOf, type EventOf, type EventSchemas, type EventsOf } from "../events/kind-events.ts";
import { instant, positiveInt } from "../events/fields.ts";

/** `data` schemas of every session event, by type. */
export const sessionEventSchemas = {
  SessionOpened: z.object({ owner: z.string(), ttlMs: positiveInt, expiresAt: instant }),
  SessionKeptAlive: z.object({ expiresAt: instant }),
  SessionClosed: z.object({}),
} satisfies EventSchemas;

type SessionEvents = EventsOf<typeof sessionEventSchemas>;

/** A session began; it ends at `expiresAt` unless kept alive. */
export type SessionOpened = SessionEvents["SessionOpened"];
/** The session's holder kept it alive: it now ends at `expiresAt`. */
export type SessionKeptAlive = SessionEvents["SessionKeptAlive"];
/** The session was closed: it ended at the event's instant. */
export type SessionClosed = SessionEvents["SessionClosed"];
/** Any session event. */
export type SessionEvent = EventOf<typeof sessionEventSchemas>;

/** Narrows an event read back to the session events (see {@link isEventOf}). */
export function isSessionEvent(event: EventEnvelope): event is SessionEvent {
  return isEventOf(sessionEventSchemas, event);
}
