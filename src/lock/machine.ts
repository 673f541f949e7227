/**
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
 * (src/lock/queue.ts). The order of checks is the contract's:
 * TTL ceiling, then CORRUPT, then the state's own checks. docs/locks.md
 * shows this machine as a diagram generated from it (`npm run diagrams`).
 */
import { assign, emit, setup } from "xstate";
import type { LockEvent } from "./events.ts";
import type { RecordedEvent } from "../events/envelope.ts";
import {
  acquiredBreaks,
  applyAcquired,
  applyReleased,
  applyRenewed,
  applyReset,
  applyWaiterQueued,
  initialLockState,
  leaseEtag,
  leaseView,
  markForeign,
  markUnparsable,
  releasedBreaks,
  renewedBreaks,
  type LockState,
} from "./state.ts";
import { queueAt } from "./queue.ts";
import type { Decision } from "../actors/decision.ts";
import { wholeContext } from "../actors/flat-machine.ts";
import type { CommandEvent, DecidedEvent, RecordedEntryEvent } from "../actors/kind-logic.ts";
import type { LockCommand, LockSettings } from "./commands.ts";
import {
  decideAcquire,
  decideClaim,
  decideRenew,
  leaseAlreadyReleased,
  notHeld,
  recordRelease,
  recordReset,
  refuseCorrupt,
  refuseSessionRenewal,
  requestedTtlMs,
  ttlTooLong,
} from "./decide.ts";

/** What the lock machine takes: a lock command at an instant, or a recorded entry of its history. */
export type LockMachineEvent = CommandEvent<LockCommand> | RecordedEntryEvent;

type Command<Op extends LockCommand["op"]> = CommandEvent<Extract<LockCommand, { op: Op }>>;

/** The lock machine's state key for a context: the lifecycle the context records. */
export function lockStateValue(context: LockState): "free" | "held" | "corrupt" {
  return context.corrupt !== null ? "corrupt" : context.lease !== null ? "held" : "free";
}

/** The lock's statechart under the given server settings. */
export function lockMachine(settings: LockSettings) {
  // A command's transition emits its decision (and leaves the context as it is).
  const decided =
    (decide: (context: LockState, event: CommandEvent<LockCommand>) => Decision<LockEvent>) =>
    ({ context, event }: { context: LockState; event: LockMachineEvent }): DecidedEvent<LockEvent> => ({
      type: "decided",
      decision: decide(context, event as CommandEvent<LockCommand>),
    });
  const recorded = (event: LockMachineEvent) => (event as RecordedEntryEvent).entry as RecordedEvent<LockEvent>;
  const command = <Op extends LockCommand["op"]>(event: LockMachineEvent) => event as Command<Op>;
  // A fold's assign returns the whole next state (src/actors/flat-machine.ts, wholeContext).
  const whole = (fold: (args: { context: LockState; event: LockMachineEvent }) => LockState) => wholeContext(fold);
  return setup({
    types: {
      context: {} as LockState,
      events: {} as LockMachineEvent,
      input: {} as { readonly id: string },
      emitted: {} as DecidedEvent<LockEvent>,
    },
    guards: {
      ttlTooLong: ({ event }) => (requestedTtlMs(command(event).command, settings) ?? 0) > settings.maxTtlMs,
      // A lease recorded to end further ahead than any TTL allows: the history cannot be trusted.
      beyondCeiling: ({ context, event }) => context.lease !== null && context.lease.expiresAtMs - command(event).now > settings.maxTtlMs,
      notHolder: ({ context, event }) => {
        const { owner, etag } = command<"renew">(event).command;
        return context.lease === null || context.lease.owner !== owner || leaseEtag(context.lease) !== etag;
      },
      sessionLease: ({ context }) => context.lease?.session !== undefined,
      otherEtag: ({ context, event }) => context.lease === null || leaseEtag(context.lease) !== command<"release">(event).command.etag,
      acquiredBreaks: ({ context, event }) => acquiredBreaks(context, recorded(event)),
      renewedBreaks: ({ context, event }) => renewedBreaks(context, recorded(event)),
      releasedBreaks: ({ context, event }) => releasedBreaks(context, recorded(event)),
    },
    actions: {
      refuseTtl: emit(decided((_, e) => ttlTooLong(requestedTtlMs(e.command, settings) ?? 0, settings.maxTtlMs))),
      refuseCorrupt: emit(decided((context) => refuseCorrupt(context, settings.maxTtlMs))),
      recordReset: emit(decided((context) => recordReset(context))),
      replyGet: emit(
        decided((context, e) => {
          const live = context.lease !== null && context.lease.expiresAtMs > e.now;
          return {
            outcome: "reply",
            reply: { lease: live ? leaseView(context.name, context.lease) : null, waiters: queueAt(context, e.now).liveCount },
          };
        }),
      ),
      acquire: emit(
        decided((context, e) => {
          const c = e.command as Extract<LockCommand, { op: "acquire" }>;
          return decideAcquire(context, c, e.now, requestedTtlMs(c, settings) ?? settings.lockTtlMs, settings);
        }),
      ),
      claim: emit(
        decided((context, e) => {
          const c = e.command as Extract<LockCommand, { op: "claim" }>;
          return decideClaim(context, c, e.now, requestedTtlMs(c, settings) ?? settings.lockTtlMs);
        }),
      ),
      renew: emit(decided((context, e) => decideRenew(context, e.command as Extract<LockCommand, { op: "renew" }>, e.now, settings))),
      refuseSessionRenewal: emit(decided((context) => refuseSessionRenewal(context))),
      refuseNotHeld: emit(decided((context, e) => notHeld(context, (e.command as Extract<LockCommand, { op: "renew" }>).owner))),
      release: emit(decided((context) => recordRelease(context))),
      refuseReleased: emit(decided((context) => leaseAlreadyReleased(context))),
      refuseOtherEtag: emit(
        decided((context) => ({
          outcome: "reject",
          rejection: { code: "NOT_HELD", message: `lock ${context.name} is held under another etag` },
        })),
      ),
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
