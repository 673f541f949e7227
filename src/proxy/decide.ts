/**
 * The proxy decider: docs/protocol.md's Proxies rules for one proxy as a pure
 * function of its state, the command and the server's instant. The rules
 * that span proxies (candidates, stats, tie-breaks) live in the selector;
 * here each proxy enforces its own cap, health and cooldowns, so a grant the
 * selector asked for on stale loads is refused rather than over the cap.
 */
import { type Decision, recorder, reject, replyOnly } from "../actors/kind-logic.ts";
import type { ProxyEvent } from "./events.ts";
import { activeLeases, inCooldown, labelsMatch, resolvableLease, sameLabels, type ProxyState } from "./state.ts";
import { cooldownLength, type GrantRefusal, type ProxyCommand, type ProxySettings } from "./commands.ts";

const record = recorder<ProxyEvent>();

/** Decides one proxy command. */
export function decideProxy(state: ProxyState, command: ProxyCommand, now: number, settings: ProxySettings): Decision<ProxyEvent> {
  const name = state.name;
  switch (command.op) {
    case "register": {
      const current = state.registration;
      const unchanged =
        current !== null &&
        current.maxLeases === command.maxLeases &&
        current.latencyMs === command.latencyMs &&
        current.healthy === command.healthy &&
        sameLabels(current.labels, command.labels);
      // Registering what is already registered leaves the state as it was: nothing to record.
      if (unchanged) return replyOnly({ proxy: name });
      return record("ProxyRegistered", {
        maxLeases: command.maxLeases,
        latencyMs: command.latencyMs,
        labels: command.labels,
        healthy: command.healthy,
      });
    }
    case "remove":
      if (state.registration === null) return reject("UNKNOWN_PROXY", `proxy ${name} is not registered`, { proxies: [name] });
      return record("ProxyRemoved", {});
    case "grant": {
      const refusal = grantRefusal(state, command.target, command.labels, now);
      if (refusal !== null) return refuseGrant(name, refusal);
      return record("ProxyLeaseGranted", {
        leaseId: command.leaseId,
        target: command.target,
        ttlMs: command.ttlMs,
        expiresAt: new Date(now + command.ttlMs).toISOString(),
        stats: command.stats,
      });
    }
    case "release":
      // Releasing what does not resolve (never granted, released, past retention) changes nothing.
      if (resolvableLease(state, command.leaseId, now, settings.cooldownMs) === undefined) return replyOnly({});
      return record("ProxyLeaseReleased", { leaseId: command.leaseId });
    case "report": {
      const lease = resolvableLease(state, command.leaseId, now, settings.cooldownMs);
      if (lease === undefined) return reject("UNKNOWN_LEASE", `lease ${command.leaseId} does not resolve`);
      if (command.result === "ok") return replyOnly({});
      const target = command.target !== "" ? command.target : lease.target;
      // A streak goes on while the pair's previous cooldown has not ended, or ended less than cooldownMs ago.
      const previous = state.cooldowns.get(target);
      const streak = previous !== undefined && now - previous.untilMs < settings.cooldownMs ? previous.streak + 1 : 1;
      const cooldownMs = cooldownLength(settings, streak);
      return record("ProxyCooldownStarted", {
        leaseId: command.leaseId,
        result: command.result,
        target,
        untilAt: new Date(now + cooldownMs).toISOString(),
        cooldownMs,
        streak,
      });
    }
  }
}

/**
 * Why the proxy cannot take a lease for `target` at `now`, checked in the
 * contract's order (unhealthy, in cooldown, at capacity), or null when it can.
 */
export function grantRefusal(
  state: ProxyState,
  target: string,
  labels: Readonly<Record<string, string>>,
  now: number,
): GrantRefusal | null {
  const registration = state.registration;
  if (registration === null || !labelsMatch(registration.labels, labels)) return "notConsidered";
  if (!registration.healthy) return "unhealthy";
  if (inCooldown(state, target, now)) return "inCooldown";
  if (activeLeases(state, now) >= registration.maxLeases) return "atCapacity";
  return null;
}

/** The code of a grant refusal; the selector never passes it on as is. */
export const GRANT_REFUSED = "NO_MATCH";

function refuseGrant(name: string, refusal: GrantRefusal): Decision<ProxyEvent> {
  return reject(GRANT_REFUSED, `proxy ${name} cannot take a lease (${refusal})`, { refused: refusal });
}

/** The refusal a grant rejection carries, or undefined when the rejection is something else. */
export function refusalOf(details: Readonly<Record<string, unknown>> | undefined): GrantRefusal | undefined {
  const refused = details?.refused;
  return refused === "notConsidered" || refused === "unhealthy" || refused === "inCooldown" || refused === "atCapacity"
    ? refused
    : undefined;
}
