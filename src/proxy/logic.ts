/** The proxy actor's logic: XState `fromTransition` logic over the proxy decider and the proxy fold. */
import type { KindLogic } from "../actors/kind-logic.ts";
import { isProxyEvent, proxyEventSchemas, type ProxyEvent } from "./events.ts";
import { eventTypesOf } from "../events/kind-events.ts";
import { type RecordedEvent } from "../events/envelope.ts";
import { decideAndFold } from "../actors/kind-logic.ts";
import { fromXState, transitionSnapshotOf } from "../actors/kind-logic.ts";
import { proxyBacklogExtras } from "./recent-acquisitions.ts";
import { acquireReplyOf, evolveProxy, initialProxyState, type ProxyState } from "./state.ts";
import { decideProxy } from "./decide.ts";
import type { ProxyCommand, ProxySettings } from "./commands.ts";

/** Builds the proxy actor logic for the given server settings. */
export function proxyLogic(settings: ProxySettings): KindLogic<ProxyState, ProxyCommand> {
  const logic: KindLogic<ProxyState, ProxyCommand> = fromXState({
    kind: "proxy",
    // 2: cooldowns carry their streak and outlive their end by cooldownMs.
    // 3: snapshots keep XState's persisted snapshot of each state (src/actors/kind-logic.ts, persistence).
    // 4: ids decode exactly (a snapshot from an older fold may hold two ids under one key).
    // 5: snapshots keep each state, not XState's persisted snapshot around it (src/actors/kind-logic.ts, persistence).
    foldVersion: 5,
    logic: proxyMachineLogic(settings),
    snapshotOf: transitionSnapshotOf<ProxyState>,
    initialState: initialProxyState,
    eventTypes: PROXY_EVENT_TYPES,
    replyFor: (state, recorded) => proxyReply(state.name, recorded),
    // The proxy's name is all of the state a reply reads.
    lateReply: { fits: () => true, render: proxyReply },
  });
  // Release and report are the lease holder's: bound to the principal the lease was granted to.
  const holderOf = (state: ProxyState, command: ProxyCommand): string | undefined => {
    if (command.op !== "release" && command.op !== "report") return undefined;
    const lease = state.leases.get(command.leaseId);
    return lease === undefined ? undefined : (lease.by ?? "");
  };
  // The proxies' read model keeps recent acquisitions beside the states; a start's backlog worker builds them too.
  return { ...logic, holderOf, backlogExtras: proxyBacklogExtras };
}

/** The proxy's XState logic: `fromTransition` over its decider and fold (a proxy is data, not a lifecycle). */
export function proxyMachineLogic(settings: ProxySettings) {
  return decideAndFold<ProxyState, ProxyCommand, ProxyEvent>({
    decide: (state, command, now) => decideProxy(state, command, now, settings),
    evolve: evolveProxy,
    initialState: initialProxyState,
  });
}

const PROXY_EVENT_TYPES = eventTypesOf(proxyEventSchemas);

/** The reply owed to `recorded`, an entry of proxy `name`'s history. */
function proxyReply(name: string, recorded: RecordedEvent): unknown {
  return isProxyEvent(recorded.event) ? proxyReplyFor(name, recorded.event) : {};
}

/** The reply owed to the command that recorded `event` on proxy `name` (also a repeated requestId's answer). */
export function proxyReplyFor(name: string, event: ProxyEvent): unknown {
  switch (event.type) {
    case "ProxyRegistered":
    case "ProxyRemoved":
      return { proxy: name };
    case "ProxyLeaseGranted":
      return acquireReplyOf(name, event.data);
    case "ProxyCooldownStarted":
      return { cooldownUntilAt: event.data.untilAt };
    default:
      return {};
  }
}
