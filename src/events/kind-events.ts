/**
 * What every kind's `events.ts` derives from its `data` schemas: the event
 * types, the events themselves, and the guard that picks them out of what is
 * read back. One home, so the five kinds narrow and fold their events alike.
 */
import type { z } from "zod";
import { isUnparsable, type EventEnvelope, type HistoryEntry } from "./envelope.ts";

/** A kind's `data` schemas, by event type. */
export type EventSchemas = Readonly<Record<string, z.ZodType>>;

/** The events `S` describes, by type: each an envelope of that type whose `data` its schema accepts. */
export type EventsOf<S extends EventSchemas> = { [T in keyof S & string]: EventEnvelope<T, z.infer<S[T]>> };

/** Any one of the events `S` describes. */
export type EventOf<S extends EventSchemas> = EventsOf<S>[keyof S & string];

/** The event types `schemas` names, as the runtime's `eventTypes` takes them. */
export function eventTypesOf(schemas: EventSchemas): ReadonlySet<string> {
  return new Set(Object.keys(schemas));
}

/**
 * Narrows an event read back to the events of `schemas`: its type is one of
 * theirs (and the decoder checked its data against that type's schema). Own
 * keys only: a type named like an Object.prototype member is not one of them.
 */
export function isEventOf<S extends EventSchemas>(schemas: S, event: EventEnvelope): event is EventOf<S> {
  return Object.hasOwn(schemas, event.type);
}

/** The event of `entry` when it parsed and is one of `schemas`' types; undefined for anything else, which a fold skips. */
export function eventIn<S extends EventSchemas>(schemas: S, entry: HistoryEntry): EventOf<S> | undefined {
  if (isUnparsable(entry)) return undefined;
  return isEventOf(schemas, entry.event) ? entry.event : undefined;
}
