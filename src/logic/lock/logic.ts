/** The lock actor's logic: the lock projection plus the lock decider. */
import { instantMs } from "../../events/index.ts";
import type { ActorLogic } from "../actor-logic.ts";
import { evolveLock, initialLockState, leaseView, type LockState } from "../../projections/lock.ts";
import { decideLock } from "./decide.ts";
import type { LockCommand, LockSettings } from "./commands.ts";
import { waitingReply } from "./waiting-reply.ts";

/** Builds the lock actor logic for the given server settings. */
export function lockLogic(settings: LockSettings): ActorLogic<LockState, LockCommand> {
  return {
    kind: "lock",
    // 2: the state holds the wait queue (waiters, headSinceMs, freedAtMs).
    foldVersion: 2,
    initialState: initialLockState,
    evolve: evolveLock,
    decide: (state, command, now) => decideLock(state, command, now, settings),
    replyFor: (state, recorded) => {
      const event = recorded.event;
      if ((event.type === "LockAcquired" || event.type === "LockRenewed") && state.lease !== null) {
        return { lease: leaseView(state.name, state.lease) };
      }
      if (event.type === "LockWaiterQueued") {
        return waitingReply(recorded.seq, instantMs((event.data as { until: string }).until));
      }
      return {};
    },
  };
}
