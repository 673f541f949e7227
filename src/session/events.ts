/** Session events (docs/protocol.md, "Sessions") and the schemas their `data` must satisfy when read back. */
import { z } from "zod";
import type { EventEnvelope } from "../events/envelope.ts";
import { instant, positiveInt } from "../events/fields.ts";

/** `data` schemas of every session event, by type. */
export const sessionEventSchemas = {
  SessionOpened: z.object({ owner: z.string(), ttlMs: positiveInt, expiresAt: instant }),
  SessionKeptAlive: z.object({ expiresAt: instant }),
  SessionClosed: z.object({}),
} satisfies Record<string, z.ZodType>;

type Data<T extends keyof typeof sessionEventSchemas> = z.infer<(typeof sessionEventSchemas)[T]>;

/** A session began; it ends at `expiresAt` unless kept alive. */
export type SessionOpened = EventEnvelope<"SessionOpened", Data<"SessionOpened">>;
/** The session's holder kept it alive: it now ends at `expiresAt`. */
export type SessionKeptAlive = EventEnvelope<"SessionKeptAlive", Data<"SessionKeptAlive">>;
/** The session was closed: it ended at the event's instant. */
export type SessionClosed = EventEnvelope<"SessionClosed", Data<"SessionClosed">>;
/** Any session event. */
export type SessionEvent = SessionOpened | SessionKeptAlive | SessionClosed;

/**
 * Narrows an event read back to the session events: its type is one a session
 * writes (and {@link decodeEvent} checked its data against that type's schema).
 */
export function isSessionEvent(event: EventEnvelope): event is SessionEvent {
  return Object.hasOwn(sessionEventSchemas, event.type);
}
