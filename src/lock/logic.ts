/** The lock actor's logic: the lock's statechart, run from its own transition table (src/actors/flat-machine.ts). */
import { instantMs } from "../events/instant.ts";
import { isUnparsable, type HistoryEntry, type RecordedEvent } from "../events/envelope.ts";
import { lockEventSchemas, type LockEvent } from "./events.ts";
import { applySessionEnds, resolveSessions } from "./session-waiters.ts";
import type { ActorLogic } from "../actors/actor-logic.ts";
import type { Decision } from "../actors/decision.ts";
import { compileFlatMachine } from "../actors/flat-machine.ts";
import { fromXState } from "../actors/kind-logic.ts";
import { initialLockState, leaseOf, leaseView, persistedLockState, reviveLockState, type LockLease, type LockState } from "./state.ts";
import { lockMachine, lockStateValue, type LockMachineEvent } from "./machine.ts";
import type { LockCommand, LockSettings } from "./commands.ts";
import { isWaitingReply, waitingReply } from "./waiting-reply.ts";

/** The lock statechart under `settings`, as XState actor logic the runtime runs without an interpreter. */
export function lockMachineLogic(settings: LockSettings) {
  return compileFlatMachine<LockState, LockMachineEvent, { readonly id: string }>(lockMachine(settings), {
    valueOf: lockStateValue,
    initialContext: (input) => initialLockState(input.id),
  });
}

/**
 * Builds the lock actor logic for the given server settings: the statechart,
 * deciding on the lock's state with its sessions' ends read from the
 * command's session table (and recording those that passed), and folding
 * with the ends its events recorded (src/lock/session-waiters.ts).
 */
export function lockLogic(settings: LockSettings): ActorLogic<LockState, LockCommand, LockEvent> {
  const machine = lockStatechart(settings);
  return {
    ...machine,
    decide(state, command, now) {
      if (command.sessions === undefined) return machine.decide(state, command, now);
      const read = resolveSessions(state, command.sessions, now);
      const decision = machine.decide(read.state, command, now);
      if (decision.outcome !== "append" || read.ended === undefined) return decision;
      return { ...decision, data: { ...decision.data, sessionEnds: read.ended } } as Decision<LockEvent>;
    },
    evolve(state, entry) {
      const ends = isUnparsable(entry) ? undefined : (entry.event.data as { sessionEnds?: Record<string, string> } | null)?.sessionEnds;
      return machine.evolve(ends === undefined ? state : applySessionEnds(state, ends), entry);
    },
  };
}

/** The statechart as the kind's logic, before its sessions are read. */
function lockStatechart(settings: LockSettings): ActorLogic<LockState, LockCommand, LockEvent> {
  const logic = lockMachineLogic(settings);
  const xstate = fromXState<LockState, LockCommand, LockEvent, ReturnType<typeof logic.snapshotOf>>({
    kind: "lock",
    // 2: the state holds the wait queue (waiters, headSinceMs, freedAtMs). Sessions (1.2) add optional fields
    // only, absent from every earlier state. 3: snapshots keep XState's persisted snapshot of each lock, not
    // the bare state, so a version 2 snapshot is set aside and the stream folded once more. 4: a lease keeps its
    // write's sequence and its expiry in ms, not the etag and ISO strings derived from them; a waiter keeps no
    // `until` string.
    // 5: ids decode exactly (a snapshot from an older fold may hold two ids under one key).
    // The queue is a persistent structure in memory and a plain array of waiters in a snapshot, as in version 5.
    foldVersion: 5,
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
  return {
    ...xstate,
    // A repeat without waitMs of an acquire that joined the queue is decided in its one turn (its place is found by
    // requestId: the lock now, or LEASE_EXISTS), rather than answered "waiting", which only the lock waiters act on.
    answersRepeat: (reply, command) => !(command.op === "acquire" && (command.waitMs ?? 0) === 0 && isWaitingReply(reply)),
    holderOf: lockHolderOf,
  };
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

const LOCK_EVENT_TYPES: ReadonlySet<string> = new Set(Object.keys(lockEventSchemas));

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

/**
 * Folds one history entry into a lock's state: the statechart's transition on
 * the recorded event. Folding reads no server setting (settings shape
 * decisions only), so any settings give this same fold.
 */
export function evolveLock(state: LockState, entry: HistoryEntry): LockState {
  return FOLD.evolve(state, entry);
}

const FOLD = lockLogic({ lockTtlMs: 1, maxTtlMs: 1 });

/** Decides one lock command: one transition of the lock's statechart (src/lock/machine.ts). */
export function decideLock(state: LockState, command: LockCommand, now: number, settings: LockSettings): Decision<LockEvent> {
  return logicFor(settings).decide(state, command, now);
}

const logics = new WeakMap<LockSettings, ActorLogic<LockState, LockCommand, LockEvent>>();
function logicFor(settings: LockSettings): ActorLogic<LockState, LockCommand, LockEvent> {
  let logic = logics.get(settings);
  if (logic === undefined) {
    logic = lockLogic(settings);
    logics.set(settings, logic);
  }
  return logic;
}
