/** The host decider: `host.set` records a change of health or draining, and nothing when the host already is so. */
import { type Decision, recorder, replyOnly } from "../decision.ts";
import type { HostEvent } from "../../events/index.ts";
import type { HostState } from "../../projections/host.ts";
import type { HostCommand } from "./commands.ts";

const record = recorder<HostEvent>();

/** Decides one host command. */
export function decideHost(state: HostState, command: HostCommand): Decision<HostEvent> {
  switch (command.op) {
    case "set":
      if (state.set && state.healthy === command.healthy && state.draining === command.draining) return replyOnly({ host: state.host });
      return record("HostStateSet", { healthy: command.healthy, draining: command.draining });
  }
}
