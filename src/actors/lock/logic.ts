/** The lock actor's logic: the lock projection plus the lock decider. */
import type { ActorLogic } from "../actor-logic.ts";
import { evolveLock, initialLockState, leaseView, type LockState } from "../../projections/lock.ts";
import { decideLock } from "./decide.ts";
import type { LockCommand, LockSettings } from "./commands.ts";

/** Builds the lock actor logic for the given server settings. */
export function lockLogic(settings: LockSettings): ActorLogic<LockState, LockCommand> {
  return {
    kind: "lock",
    foldVersion: 1,
    initialState: initialLockState,
    evolve: evolveLock,
    decide: (state, command, now) => decideLock(state, command, now, settings),
    replyFor: (state, recorded) => {
      const type = recorded.event.type;
      if ((type === "LockAcquired" || type === "LockRenewed") && state.lease !== null) {
        return { lease: leaseView(state.name, state.lease) };
      }
      return {};
    },
  };
}
