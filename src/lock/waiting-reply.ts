/**
 * The answer a waiting acquire gets from its turn while it has a place in the
 * queue but not the lock yet. It never reaches the wire: the lock waiters
 * (src/lock/waiters.ts) park the request on it and answer it
 * later with the lease or `LEASE_EXISTS`. Plain JSON, since a reply
 * remembered for a `requestId` is kept in projection snapshots.
 */

/** A place in the queue: the stream sequence of its `LockWaiterQueued`, and when its wait ends (epoch ms). */
export interface WaitingReply {
  readonly waiting: { readonly place: number; readonly untilMs: number };
}

/** The waiting answer for a place. */
export function waitingReply(place: number, untilMs: number): WaitingReply {
  return { waiting: { place, untilMs } };
}

/** Is `reply` a waiting answer (and not a lease)? */
export function isWaitingReply(reply: unknown): reply is WaitingReply {
  if (typeof reply !== "object" || reply === null || !("waiting" in reply)) return false;
  const waiting = reply.waiting;
  return typeof waiting === "object" && waiting !== null && typeof (waiting as { place?: unknown }).place === "number";
}
