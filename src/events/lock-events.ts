/**
 * Lock events (docs/protocol.md, "The event stream" and "Locks") and the schemas
 * their `data` must satisfy when read back.
 */
import { z } from "zod";
import type { EventEnvelope } from "./envelope.ts";

import { count, instant, positiveInt } from "./fields.ts";

const generation = positiveInt;
const ttlMs = positiveInt;

/** `data` schemas of every lock event, by type. */
export const lockEventSchemas = {
  LockAcquired: z.object({ owner: z.string(), generation, ttlMs, expiresAt: instant, previousOwner: z.string() }),
  LockRenewed: z.object({ owner: z.string(), generation, ttlMs, expiresAt: instant }),
  LockReleased: z.object({ owner: z.string(), generation }),
  LockReset: z.object({ generation: count }),
} satisfies Record<string, z.ZodType>;

type Data<T extends keyof typeof lockEventSchemas> = z.infer<(typeof lockEventSchemas)[T]>;

/** A lease was granted; `previousOwner` is the expired holder it replaced, or `""`. */
export type LockAcquired = EventEnvelope<"LockAcquired", Data<"LockAcquired">>;
/** The holder extended its lease; the generation is unchanged. */
export type LockRenewed = EventEnvelope<"LockRenewed", Data<"LockRenewed">>;
/** The holder gave the lease up. */
export type LockReleased = EventEnvelope<"LockReleased", Data<"LockReleased">>;
/** An operator freed the lock; `generation` is the highest seen so far. */
export type LockReset = EventEnvelope<"LockReset", Data<"LockReset">>;
/** Any lock event. */
export type LockEvent = LockAcquired | LockRenewed | LockReleased | LockReset;

/**
 * Narrows an event read back to the lock events: its type is one a lock
 * writes (and {@link decodeEvent} checked its data against that type's schema).
 */
export function isLockEvent(event: EventEnvelope): event is LockEvent {
  return Object.hasOwn(lockEventSchemas, event.type);
}
