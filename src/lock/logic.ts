/** The lock actor's logic: the lock's statechart, run from its own transition table (src/actors/kind-logic.ts). */
import { instantMs } from "../events/envelope.ts";
import { isUnparsable, type RecordedEvent } from "../events/envelope.ts";
import { lockEventSchemas, type LockEvent } from "./events.ts";
import { eventTypesOf } from "../events/kind-events.ts";
import { applySessionEnds, resolveSessions } from "./session-waiters.ts";
import {
  type KindLogic,
  type Decision,
  compileFlatMachine,
  decision,
  fromXState,
  recorder,
  reject,
  replyOnly,
  wholeContext,
  type CommandEvent,
  type DecidedEvent,
  type RecordedEntryEvent,
} from "../actors/kind-logic.ts";
import {
  initialLockState,
  leaseOf,
  leaseView,
  persistedLockState,
  reviveLockState,
  type LockLease,
  type LockState,
  leaseExpiresAt,
  acquiredBreaks,
  applyAcquired,
  applyReleased,
  applyRenewed,
  applyReset,
  applyWaiterQueued,
  leaseEtag,
  markForeign,
  markUnparsable,
  releasedBreaks,
  renewedBreaks,
} from "./state.ts";
import { type LockCommand, type LockSettings, DEFAULT_CLAIM_WINDOW_MS, type AcquireLock, type ClaimLock } from "./commands.ts";
import { liveCountFrom, livePlace, queueAt, type LockWaiter, type QueueView } from "./state.ts";
import { sessionLiveAt, type SessionState } from "../session/index.ts";
import { assign, setup } from "xstate";

/**
 * Builds the lock actor logic for the given server settings: the statechart,
 * deciding on the lock's state with its sessions' ends read from the
 * command's session table (and recording those that passed), and folding
 * with the ends its events recorded (src/lock/session-waiters.ts).
 */
export function lockLogic(settings: LockSettings): KindLogic<LockState, LockCommand, LockEvent> {
  const { machine, compiled } = statechartLogic(settings);
  return {
    ...machine,
    // The statechart's compiled transition calls the decider its action names: three frames from here to a decision.
    decide(state, command, now) {
      const read = command.sessions === undefined ? undefined : resolveSessions(state, command.sessions, now);
      const made = compiled.decideContext(read?.state ?? state, { type: command.op, command, now }) as Decision<LockEvent> | undefined;
      if (made === undefined) throw new Error(`the lock logic decided nothing for ${command.op}`);
      if (made.outcome !== "append" || read?.ended === undefined) return made;
      return { ...made, data: { ...made.data, sessionEnds: read.ended } } as Decision<LockEvent>;
    },
    evolve(state, entry) {
      const ends = isUnparsable(entry) ? undefined : (entry.event.data as { sessionEnds?: Record<string, string> } | null)?.sessionEnds;
      return machine.evolve(ends === undefined ? state : applySessionEnds(state, ends), entry);
    },
  };
}

/** The statechart (run from its own transition table, without an interpreter) as the kind's logic, before its sessions are read. */
function statechartLogic(settings: LockSettings) {
  const logic = compileFlatMachine<LockState, LockMachineEvent, { readonly id: string }>(lockMachine(settings), {
    valueOf: lockStateValue,
    initialContext: (input) => initialLockState(input.id),
  });
  const xstate = fromXState<LockState, LockCommand, LockEvent, ReturnType<typeof logic.snapshotOf>>({
    kind: "lock",
    // 2: the state holds the wait queue (waiters, headSinceMs, freedAtMs). Sessions add optional fields
    // only, absent from every earlier state. 3: snapshots keep XState's persisted snapshot of each lock, not
    // the bare state, so a version 2 snapshot is set aside and the stream folded once more. 4: a lease keeps its
    // write's sequence and its expiry in ms, not the etag and ISO strings derived from them; a waiter keeps no
    // `until` string.
    // 5: ids decode exactly (a snapshot from an older fold may hold two ids under one key).
    // The queue is a persistent structure in memory and a plain array of waiters in a snapshot, as in version 5.
    // 6: snapshots keep each lock's state (its queue as an array), not XState's persisted snapshot around it.
    foldVersion: 6,
    logic,
    snapshotOf: logic.snapshotOf,
    initialState: initialLockState,
    persistedContext: persistedLockState,
    reviveState: reviveLockState,
    eventTypes: LOCK_EVENT_TYPES,
    replyFor: (state, recorded) => lockReply(state.name, state.lease, recorded),
    lateReply: {
      // A grant or renewal answers the lease the lock holds after it: the one its own data wrote, unless the
      // statechart did not take it (a corrupt lock), which only the state knows.
      fits: (state, recorded) => !grantsLease(recorded) || state.lease?.seq === recorded.seq,
      render: (id, recorded) => {
        const event = recorded.event as LockEvent;
        // The view shows no principal (`by`): the event's own stands in for it.
        const written = event.type === "LockAcquired" || event.type === "LockRenewed" ? leaseOf(event.data, recorded.seq, event.by) : null;
        return lockReply(id, written, recorded);
      },
    },
  });
  const machine: KindLogic<LockState, LockCommand, LockEvent> = {
    ...xstate,
    // A repeat without waitMs of an acquire that joined the queue is decided in its one turn (its place is found by
    // requestId: the lock now, or LEASE_EXISTS), rather than answered "waiting", which only the lock waiters act on.
    answersRepeat: (reply, command) => !(command.op === "acquire" && (command.waitMs ?? 0) === 0 && isWaitingReply(reply)),
    holderOf: lockHolderOf,
  };
  return { machine, compiled: logic };
}

/**
 * The principal a holder-bound lock command answers to: a renewal's or
 * release's, the one that created the lease (expired or not); an acquire's or
 * claim's under a session, the one that opened the session.
 */
function lockHolderOf(state: LockState, command: LockCommand): string | undefined {
  switch (command.op) {
    case "renew":
    case "release":
      return state.lease === null ? undefined : (state.lease.by ?? "");
    case "acquire":
    case "claim": {
      if (command.session === undefined) return undefined;
      const session = command.sessions?.get(command.session);
      return session?.opened === true ? (session.by ?? "") : undefined;
    }
    default:
      return undefined;
  }
}

const LOCK_EVENT_TYPES = eventTypesOf(lockEventSchemas);

/** Does `recorded` grant or renew a lease (its reply is the lease the lock then holds)? */
function grantsLease(recorded: RecordedEvent): boolean {
  return recorded.event.type === "LockAcquired" || recorded.event.type === "LockRenewed";
}

/** The reply owed to `recorded`, given the lease lock `name` holds right after it. */
function lockReply(name: string, lease: LockLease | null, recorded: RecordedEvent): unknown {
  const event = recorded.event;
  if (grantsLease(recorded) && lease !== null) return { lease: leaseView(name, lease) };
  if (event.type === "LockWaiterQueued") return waitingReply(recorded.seq, instantMs((event.data as { until: string }).until));
  return {};
}

/*
 * The lock's decisions: docs/protocol.md's Locks rules as pure functions of
 * the lock's state, the command and the server's instant, which the lock's
 * statechart (below) picks among by its state and guards. The wait
 * queue is part of the state and read at `now` (src/lock/state.ts):
 * while a head waiter's claim window is open, the lock counts as held by it.
 */

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
export function refuseCorrupt(state: LockState, _event: LockMachineEvent, settings: LockSettings): Decision<LockEvent> {
  return reject("CORRUPT", `lock ${state.name} refuses its history: ${corruptionOf(state, settings.maxTtlMs)}; an operator must reset it`);
}

/** TTL_EXCEEDS_MAX for the TTL a command asks for. */
function refuseTtl(_state: LockState, event: LockMachineEvent, settings: LockSettings): Decision<LockEvent> {
  return ttlTooLong(requestedTtlMs(commandOf(event).command, settings) ?? 0, settings.maxTtlMs);
}

/** `lock.get`: the live lease, if any, and how many wait. */
function replyGet(state: LockState, event: LockMachineEvent): Decision<LockEvent> {
  const { now } = commandOf(event);
  const live = state.lease !== null && state.lease.expiresAtMs > now;
  return { outcome: "reply", reply: { lease: live ? leaseView(state.name, state.lease) : null, waiters: queueAt(state, now).liveCount } };
}

/** NOT_HELD for a release under an etag other than the lease's. */
function refuseOtherEtag(state: LockState): Decision<LockEvent> {
  return reject("NOT_HELD", `lock ${state.name} is held under another etag`);
}

/** BAD_REQUEST for a renewal of a session lease: the session's keepalive keeps it. */
export function refuseSessionRenewal(state: LockState): Decision<LockEvent> {
  return reject(
    "BAD_REQUEST",
    `lock ${state.name} is held under session ${state.lease?.session ?? ""}: keep the session alive instead of renewing`,
  );
}

/** NOT_HELD for a renewal by someone other than the holder, or with another etag. */
export function notHeld(state: LockState, event: LockMachineEvent): Decision<LockEvent> {
  return reject("NOT_HELD", `lock ${state.name} is not held by ${commandOf<"renew">(event).command.owner} with that etag`);
}

/** A holder's renewal: extends the lease by its own TTL or the one asked for, under the ceiling. */
export function decideRenew(state: LockState, event: LockMachineEvent, settings: LockSettings): Decision<LockEvent> {
  const { command, now } = commandOf<"renew">(event);
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
export function decideAcquire(state: LockState, event: LockMachineEvent, settings: LockSettings): Decision<LockEvent> {
  const { command, now } = commandOf<"acquire">(event);
  const ttlMs = requestedTtlMs(command, settings) ?? settings.lockTtlMs;
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
export function decideClaim(state: LockState, event: LockMachineEvent, settings: LockSettings): Decision<LockEvent> {
  const { command, now } = commandOf<"claim">(event);
  const ttlMs = requestedTtlMs(command, settings) ?? settings.lockTtlMs;
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

/*
 * The lock as an XState statechart: its states are its lifecycle, its
 * transitions on commands emit its decision (the domain event to record, a
 * reply, or a refusal), and its transitions on recorded events fold them.
 *
 *   free ── LockAcquired ──► held ── LockReleased ──► free
 *     │                       │
 *     └── an event that breaks the lock's invariants ──► corrupt ── LockReset ──► free
 *
 * `held` means a lease is recorded; whether it is live is arithmetic on the
 * decision's instant (`expiresAt`), never a timer, and so is the wait queue
 * (src/lock/state.ts). The order of checks is the contract's:
 * TTL ceiling, then CORRUPT, then the state's own checks. docs/locks.md
 * shows this machine as a diagram generated from it (`npm run diagrams`).
 */

/** What the lock machine takes: a lock command at an instant, or a recorded entry of its history. */
export type LockMachineEvent = CommandEvent<LockCommand> | RecordedEntryEvent;

type Command<Op extends LockCommand["op"]> = CommandEvent<Extract<LockCommand, { op: Op }>>;

/** The command of a command transition's event (a decider runs only on commands). */
function commandOf<Op extends LockCommand["op"] = LockCommand["op"]>(event: LockMachineEvent): Command<Op> {
  return event as Command<Op>;
}

/** The lock machine's state key for a context: the lifecycle the context records. */
export function lockStateValue(context: LockState): "free" | "held" | "corrupt" {
  return context.corrupt !== null ? "corrupt" : context.lease !== null ? "held" : "free";
}

/** A lock command's action: the decider it names, given the server settings (src/actors/kind-logic.ts, `decision`). */
const lockDecision = decision<LockState, LockMachineEvent, LockEvent, LockSettings>;

/** The lock's statechart under the given server settings. */
export function lockMachine(settings: LockSettings) {
  const recorded = (event: LockMachineEvent) => (event as RecordedEntryEvent).entry as RecordedEvent<LockEvent>;
  // A fold's assign returns the whole next state (src/actors/kind-logic.ts, wholeContext).
  const whole = (fold: (args: { context: LockState; event: LockMachineEvent }) => LockState) => wholeContext(fold);
  return setup({
    types: {
      context: {} as LockState,
      events: {} as LockMachineEvent,
      input: {} as { readonly id: string },
      emitted: {} as DecidedEvent<LockEvent>,
    },
    guards: {
      ttlTooLong: ({ event }) => (requestedTtlMs(commandOf(event).command, settings) ?? 0) > settings.maxTtlMs,
      // A lease recorded to end further ahead than any TTL allows: the history cannot be trusted.
      beyondCeiling: ({ context, event }) => context.lease !== null && context.lease.expiresAtMs - commandOf(event).now > settings.maxTtlMs,
      notHolder: ({ context, event }) => {
        const { owner, etag } = commandOf<"renew">(event).command;
        return context.lease === null || context.lease.owner !== owner || leaseEtag(context.lease) !== etag;
      },
      sessionLease: ({ context }) => context.lease?.session !== undefined,
      otherEtag: ({ context, event }) => context.lease === null || leaseEtag(context.lease) !== commandOf<"release">(event).command.etag,
      acquiredBreaks: ({ context, event }) => acquiredBreaks(context, recorded(event)),
      renewedBreaks: ({ context, event }) => renewedBreaks(context, recorded(event)),
      releasedBreaks: ({ context, event }) => releasedBreaks(context, recorded(event)),
    },
    actions: {
      refuseTtl: lockDecision(refuseTtl, settings),
      refuseCorrupt: lockDecision(refuseCorrupt, settings),
      recordReset: lockDecision(recordReset, settings),
      replyGet: lockDecision(replyGet, settings),
      acquire: lockDecision(decideAcquire, settings),
      claim: lockDecision(decideClaim, settings),
      renew: lockDecision(decideRenew, settings),
      refuseSessionRenewal: lockDecision(refuseSessionRenewal, settings),
      refuseNotHeld: lockDecision(notHeld, settings),
      release: lockDecision(recordRelease, settings),
      refuseReleased: lockDecision(leaseAlreadyReleased, settings),
      refuseOtherEtag: lockDecision(refuseOtherEtag, settings),
      applyQueued: assign(whole(({ context, event }) => applyWaiterQueued(context, recorded(event)))),
      applyAcquired: assign(whole(({ context, event }) => applyAcquired(context, recorded(event)))),
      applyRenewed: assign(whole(({ context, event }) => applyRenewed(context, recorded(event)))),
      applyReleased: assign(whole(({ context, event }) => applyReleased(context, recorded(event)))),
      applyReset: assign(whole(({ context, event }) => applyReset(context, recorded(event)))),
      markUnparsable: assign(whole(({ context, event }) => markUnparsable(context, (event as RecordedEntryEvent).entry))),
      markForeign: assign(whole(({ context, event }) => markForeign(context, recorded(event)))),
    },
  }).createMachine({
    id: "lock",
    context: ({ input }) => initialLockState(input.id),
    initial: "free",
    // What every state does alike: the operator's reset, the queue, and entries that break the history.
    on: {
      reset: { actions: "recordReset" },
      LockWaiterQueued: { actions: "applyQueued" },
      LockReset: { target: ".free", actions: "applyReset" },
      unparsable: { target: ".corrupt", actions: "markUnparsable" },
      foreign: { target: ".corrupt", actions: "markForeign" },
    },
    states: {
      free: {
        on: {
          acquire: [{ guard: "ttlTooLong", actions: "refuseTtl" }, { actions: "acquire" }],
          claim: [{ guard: "ttlTooLong", actions: "refuseTtl" }, { actions: "claim" }],
          renew: [{ guard: "ttlTooLong", actions: "refuseTtl" }, { actions: "refuseNotHeld" }],
          release: { actions: "refuseReleased" },
          get: { actions: "replyGet" },
          LockAcquired: [
            { guard: "acquiredBreaks", target: "corrupt", actions: "applyAcquired" },
            { target: "held", actions: "applyAcquired" },
          ],
          // Nothing is held: a renewal or release of a lease cannot match it.
          LockRenewed: { target: "corrupt", actions: "applyRenewed" },
          LockReleased: { target: "corrupt", actions: "applyReleased" },
        },
      },
      held: {
        on: {
          acquire: [
            { guard: "ttlTooLong", actions: "refuseTtl" },
            { guard: "beyondCeiling", actions: "refuseCorrupt" },
            { actions: "acquire" },
          ],
          claim: [
            { guard: "ttlTooLong", actions: "refuseTtl" },
            { guard: "beyondCeiling", actions: "refuseCorrupt" },
            { actions: "claim" },
          ],
          renew: [
            { guard: "ttlTooLong", actions: "refuseTtl" },
            { guard: "beyondCeiling", actions: "refuseCorrupt" },
            { guard: "notHolder", actions: "refuseNotHeld" },
            { guard: "sessionLease", actions: "refuseSessionRenewal" },
            { actions: "renew" },
          ],
          release: [
            { guard: "beyondCeiling", actions: "refuseCorrupt" },
            { guard: "otherEtag", actions: "refuseOtherEtag" },
            { actions: "release" },
          ],
          get: [{ guard: "beyondCeiling", actions: "refuseCorrupt" }, { actions: "replyGet" }],
          LockAcquired: [
            { guard: "acquiredBreaks", target: "corrupt", actions: "applyAcquired" },
            { target: "held", actions: "applyAcquired" },
          ],
          LockRenewed: [{ guard: "renewedBreaks", target: "corrupt", actions: "applyRenewed" }, { actions: "applyRenewed" }],
          LockReleased: [
            { guard: "releasedBreaks", target: "corrupt", actions: "applyReleased" },
            { target: "free", actions: "applyReleased" },
          ],
        },
      },
      corrupt: {
        // The history is refused until a reset; what is recorded meanwhile is still folded.
        on: {
          acquire: [{ guard: "ttlTooLong", actions: "refuseTtl" }, { actions: "refuseCorrupt" }],
          claim: [{ guard: "ttlTooLong", actions: "refuseTtl" }, { actions: "refuseCorrupt" }],
          renew: [{ guard: "ttlTooLong", actions: "refuseTtl" }, { actions: "refuseCorrupt" }],
          release: { actions: "refuseCorrupt" },
          get: { actions: "refuseCorrupt" },
          LockAcquired: { actions: "applyAcquired" },
          LockRenewed: { actions: "applyRenewed" },
          LockReleased: { actions: "applyReleased" },
        },
      },
    },
  });
}

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
