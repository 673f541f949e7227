/**
 * Lock events (docs/protocol.md, "The event stream" and "Locks") and the schemas
 * their `data` must satisfy when read back.
 */
import { z } from "zod";
import type { EventEnvelope } from "../events/envelope.ts";
import { isEventOf, type EventOf, type EventSchemas, type EventsOf } from "../events/kind-events.ts";

import { count, instant, positiveInt } from "../events/fields.ts";

const generation = positiveInt;
const ttlMs = positiveInt;
// 1.2, leasehold's: the sessions the lock's state referred to (its lease's, its waiters') that had ended when the
// event was decided, and when; the fold takes their ends from here, as it reads no other actor's history.
const sessionEnds = z.record(z.string(), instant).optional();

/** `data` schemas of every lock event, by type. */
export const lockEventSchemas = {
  // `waiterSeq`: the stream sequence of the LockWaiterQueued whose place this grant answers.
  LockAcquired: z.object({
    owner: z.string(),
    generation,
    ttlMs,
    expiresAt: instant,
    previousOwner: z.string(),
    waiterSeq: positiveInt.optional(),
    // 1.2: the session the lease hangs on (its ttlMs and expiresAt are the session's at the grant).
    session: z.string().optional(),
    sessionEnds,
  }),
  LockRenewed: z.object({ owner: z.string(), generation, ttlMs, expiresAt: instant, sessionEnds }),
  LockReleased: z.object({ owner: z.string(), generation, sessionEnds }),
  LockReset: z.object({ generation: count, sessionEnds }),
  // `claimWindowMs`: the window this waiter has once it is head, recorded so every reader folds the queue alike.
  // `session`: the session the waiting acquire is under; it loses its place when the session ends.
  LockWaiterQueued: z.object({
    owner: z.string(),
    until: instant,
    claimWindowMs: positiveInt,
    session: z.string().optional(),
    sessionEnds,
  }),
} satisfies EventSchemas;

type LockEvents = EventsOf<typeof lockEventSchemas>;

/** A lease was granted; `previousOwner` is the expired holder it replaced, or `""`. */
export type LockAcquired = LockEvents["LockAcquired"];
/** The holder extended its lease; the generation is unchanged. */
export type LockRenewed = LockEvents["LockRenewed"];
/** The holder gave the lease up. */
export type LockReleased = LockEvents["LockReleased"];
/** An operator freed the lock; `generation` is the highest seen so far. */
export type LockReset = LockEvents["LockReset"];
/** An acquire joined the lock's wait queue until `until` (a blocking acquire). */
export type LockWaiterQueued = LockEvents["LockWaiterQueued"];
/** Any lock event. */
export type LockEvent = EventOf<typeof lockEventSchemas>;

/** Narrows an event read back to the lock events (see {@link isEventOf}). */
export function isLockEvent(event: EventEnvelope): event is LockEvent {
  return isEventOf(lockEventSchemas, event);
}
