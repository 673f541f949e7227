/** The proxy actor's logic: the proxy projection plus the proxy decider. */
import type { ActorLogic } from "../actor-logic.ts";
import { isProxyEvent, type ProxyEvent } from "../../events/index.ts";
import { acquireReplyOf, evolveProxy, initialProxyState, type ProxyState } from "../../projections/proxy.ts";
import { decideProxy } from "./decide.ts";
import type { ProxyCommand, ProxySettings } from "./commands.ts";

/** Builds the proxy actor logic for the given server settings. */
export function proxyLogic(settings: ProxySettings): ActorLogic<ProxyState, ProxyCommand> {
  return {
    kind: "proxy",
    // 2: cooldowns carry their streak and outlive their end by cooldownMs.
    foldVersion: 2,
    initialState: initialProxyState,
    evolve: evolveProxy,
    decide: (state, command, now) => decideProxy(state, command, now, settings),
    replyFor: (state, recorded) => (isProxyEvent(recorded.event) ? proxyReplyFor(state.name, recorded.event) : {}),
  };
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
