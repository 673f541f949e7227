/**
 * The lock's decisions: docs/protocol.md's Locks rules as pure functions of
 * the lock's state, the command and the server's instant, which the lock's
 * statechart (./machine.ts) picks among by its state and guards. The wait
 * queue is part of the state and read at `now` (src/lock/queue.ts):
 * while a head waiter's claim window is open, the lock counts as held by it.
 */
import { type Decision, recorder, reject, replyOnly } from "../actors/decision.ts";
import type { LockEvent } from "./events.ts";
import { leaseExpiresAt, type LockState } from "./state.ts";

import { liveCountFrom, livePlace, queueAt, type LockWaiter, type QueueView } from "./queue.ts";
import { sessionLiveAt, type SessionState } from "../session/index.ts";
import {
  DEFAULT_CLAIM_WINDOW_MS,
  type AcquireLock,
  type ClaimLock,
  type LockCommand,
  type LockSettings,
  type RenewLock,
} from "./commands.ts";
import { waitingReply } from "./waiting-reply.ts";

const record = recorder<LockEvent>();

/** The TTL a command asks for: an acquire's or claim's own or the default, a renewal's own; undefined when none applies. */
export function requestedTtlMs(command: LockCommand, settings: LockSettings): number | undefined {
  // A session lease's TTL is its session's, which the session's own TTL rules bounded.
  if ((command.op === "acquire" || command.op === "claim") && command.session !== undefined) return undefined;
  if (command.op === "acquire" || command.op === "claim") return command.ttlMs ?? settings.lockTtlMs;
  return command.op === "renew" ? command.ttlMs : undefined;
}

/** The operator's reset: frees the lock and carries the generation on. */
export function recordReset(state: LockState): Decision<LockEvent> {
  return record("LockReset", { generation: state.generation });
}

/** CORRUPT: the lock refuses its history until a reset. */
export function refuseCorrupt(state: LockState, maxTtlMs: number): Decision<LockEvent> {
  return reject("CORRUPT", `lock ${state.name} refuses its history: ${corruptionOf(state, maxTtlMs)}; an operator must reset it`);
}

/** BAD_REQUEST for a renewal of a session lease: the session's keepalive keeps it. */
export function refuseSessionRenewal(state: LockState): Decision<LockEvent> {
  return reject(
    "BAD_REQUEST",
    `lock ${state.name} is held under session ${state.lease?.session ?? ""}: keep the session alive instead of renewing`,
  );
}

/** NOT_HELD for a renewal by someone other than the holder, or with another etag. */
export function notHeld(state: LockState, owner: string): Decision<LockEvent> {
  return reject("NOT_HELD", `lock ${state.name} is not held by ${owner} with that etag`);
}

/** A holder's renewal: extends the lease by its own TTL or the one asked for, under the ceiling. */
export function decideRenew(state: LockState, command: RenewLock, now: number, settings: LockSettings): Decision<LockEvent> {
  const lease = state.lease!;
  const renewTtl = command.ttlMs ?? lease.ttlMs;
  if (renewTtl > settings.maxTtlMs) return ttlTooLong(renewTtl, settings.maxTtlMs);
  return record("LockRenewed", {
    owner: lease.owner,
    generation: lease.generation,
    ttlMs: renewTtl,
    expiresAt: new Date(now + renewTtl).toISOString(),
  });
}

/** The holder gives the lease up. */
export function recordRelease(state: LockState): Decision<LockEvent> {
  const lease = state.lease!;
  return record("LockReleased", { owner: lease.owner, generation: lease.generation });
}

/** ALREADY_RELEASED: nothing is held. */
export function leaseAlreadyReleased(state: LockState): Decision<LockEvent> {
  return reject("ALREADY_RELEASED", `lock ${state.name} is not held`);
}

/**
 * An acquire as it arrives: a retry by requestId finds its live place (and
 * appends nothing); otherwise the lock is taken when free with nobody
 * waiting, the request joins the queue when it may wait, or is refused.
 */
export function decideAcquire(
  state: LockState,
  command: AcquireLock,
  now: number,
  ttlMs: number,
  settings: LockSettings,
): Decision<LockEvent> {
  const session = sessionOf(command, now);
  if ("refused" in session) return session.refused;
  const terms = session.terms ?? { ttlMs, expiresAtMs: now + ttlMs };
  const queue = queueAt(state, now);
  // A live place joined by this requestId is this request's (the runtime answers most retries from the remembered reply first).
  const place = command.requestId === undefined ? undefined : placeJoinedBy(queue, command.requestId, command.owner, now);
  if (place !== undefined) {
    if (queue.head === place && queue.headMayClaim) return grant(state, command.owner, terms, place);
    if ((command.waitMs ?? 0) === 0) return leaseExists(state, queue, now);
    return replyOnly(waitingReply(place.seq, place.untilMs));
  }
  if (available(state, queue, now)) return grant(state, command.owner, terms);
  const waitMs = command.waitMs ?? 0;
  if (waitMs > 0) {
    const full = settings.maxWaiters === undefined ? undefined : liveCountFrom(state, now, settings.maxWaiters);
    if (full !== undefined) return tooManyWaiters(state, full, settings.maxWaiters!);
    return record("LockWaiterQueued", {
      owner: command.owner,
      until: new Date(now + waitMs).toISOString(),
      claimWindowMs: settings.claimWindowMs ?? DEFAULT_CLAIM_WINDOW_MS,
      ...(command.session === undefined ? {} : { session: command.session }),
    });
  }
  return leaseExists(state, queue, now);
}

/** A parked request looking again: take the lock in its claim window, keep waiting, or give up. */
export function decideClaim(state: LockState, command: ClaimLock, now: number, ttlMs: number): Decision<LockEvent> {
  const session = sessionOf(command, now);
  if ("refused" in session) return session.refused;
  const terms = session.terms ?? { ttlMs, expiresAtMs: now + ttlMs };
  const queue = queueAt(state, now);
  const place = livePlace(state, now, command.place);
  if (place !== undefined && queue.head === place && queue.headMayClaim) return grant(state, command.owner, terms, place);
  const waitedMs = Math.max(0, now - command.waitingSince);
  if (now >= command.giveUpAt) return leaseExists(state, queue, now, waitedMs);
  if (place !== undefined) return replyOnly(waitingReply(place.seq, place.untilMs));
  // The place lapsed (its `until` passed, or its window ended unclaimed): decided as a plain acquire.
  return available(state, queue, now) ? grant(state, command.owner, terms) : leaseExists(state, queue, now, waitedMs);
}

/** The live place a request with this requestId and owner joined, if any (found through the queue's index by requestId). */
function placeJoinedBy(queue: QueueView, requestId: string, owner: string, now: number): LockWaiter | undefined {
  if (queue.head === null) return undefined;
  return queue.waiting.joinedBy(requestId, owner, now);
}

/** Free for an acquire without a place: no live lease and nobody waiting. */
function available(state: LockState, queue: QueueView, now: number): boolean {
  return !(state.lease !== null && state.lease.expiresAtMs > now) && queue.head === null;
}

/** What a lease is granted for: its TTL and end, and the session it hangs on (then both are the session's). */
interface LeaseTerms {
  readonly ttlMs: number;
  readonly expiresAtMs: number;
  readonly session?: string;
}

/**
 * The session an acquire or claim names, read from the command's session
 * table: BAD_REQUEST for another owner's, NO_SESSION when it ended or never
 * existed, else the terms of a lease under it; no terms without a session.
 */
function sessionOf(
  command: AcquireLock | ClaimLock,
  now: number,
): { readonly terms?: LeaseTerms } | { readonly refused: Decision<LockEvent> } {
  if (command.session === undefined) return {};
  const session: SessionState | undefined = command.sessions?.get(command.session);
  if (session?.opened === true && session.owner !== command.owner) {
    return { refused: reject("BAD_REQUEST", `owner: ${command.owner} is not the owner of session ${command.session} (${session.owner})`) };
  }
  if (session === undefined || !sessionLiveAt(session, now)) {
    return { refused: reject("NO_SESSION", `session ${command.session} has ended or never existed`) };
  }
  return { terms: { ttlMs: session.ttlMs, expiresAtMs: session.expiresAtMs, session: session.id } };
}

function grant(state: LockState, owner: string, terms: LeaseTerms, place?: LockWaiter): Decision<LockEvent> {
  return record("LockAcquired", {
    owner,
    generation: state.generation + 1,
    ttlMs: terms.ttlMs,
    expiresAt: new Date(terms.expiresAtMs).toISOString(),
    previousOwner: state.lease?.owner ?? "",
    ...(place === undefined ? {} : { waiterSeq: place.seq }),
    ...(terms.session === undefined ? {} : { session: terms.session }),
  });
}

/** LEASE_EXISTS: held by the live lease, or — the lock being free — by the head waiter until its claim window ends. */
function leaseExists(state: LockState, queue: QueueView, now: number, waitedMs?: number): Decision<LockEvent> {
  const lease = state.lease;
  const held =
    lease !== null && lease.expiresAtMs > now
      ? { owner: lease.owner, expiresAt: leaseExpiresAt(lease) }
      : { owner: queue.head?.owner ?? "", expiresAt: new Date(queue.head === null ? now : queue.headLeavesAtMs).toISOString() };
  const waiting = queue.head !== null && !(lease !== null && lease.expiresAtMs > now) ? " (its claim window)" : "";
  return reject("LEASE_EXISTS", `lock ${state.name} is held by ${held.owner} until ${held.expiresAt}${waiting}`, {
    ...held,
    ...(waitedMs === undefined ? {} : { waitedMs }),
  });
}

/** TOO_MANY_WAITERS: the queue holds `maxWaiters` live waiters already; nothing is appended. */
function tooManyWaiters(state: LockState, waiters: number, maxWaiters: number): Decision<LockEvent> {
  return reject("TOO_MANY_WAITERS", `lock ${state.name} has ${waiters} waiters, the server's maximum (${maxWaiters})`, {
    waiters,
    maxWaiters,
  });
}

/** Why the lock's history cannot be trusted (a recorded reason, or a lease beyond the ceiling at the decision's instant). */
function corruptionOf(state: LockState, maxTtlMs: number): string {
  if (state.corrupt !== null) return state.corrupt;
  return `its lease expires at ${state.lease === null ? "an unknown instant" : leaseExpiresAt(state.lease)}, more than maxTtlMs (${maxTtlMs}) after now`;
}

/** TTL_EXCEEDS_MAX. */
export function ttlTooLong(ttlMs: number, maxTtlMs: number): Decision<LockEvent> {
  return reject("TTL_EXCEEDS_MAX", `ttlMs ${ttlMs} exceeds the server's maximum ${maxTtlMs}`, { ttlMs, maxTtlMs });
}
