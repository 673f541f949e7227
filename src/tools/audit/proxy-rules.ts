/** The audit's proxy rules: grants within capacity, health, registration and cooldowns; lease ids granted once and resolved. */
import { instantMs } from "../../events/envelope.ts";
import { isProxyEvent } from "../../proxy/events.ts";
import { activeLeases, inCooldown, pruneProxy, resolvableLease, type ProxyState } from "../../proxy/state.ts";
import { cell } from "../table.ts";
import type { KindRules } from "./kind-rules.ts";

const RULES = {
  "proxy-over-capacity": "a grant never leaves a proxy with more unexpired leases than its maxLeases (at the grant's instant)",
  "proxy-grant-in-cooldown": "no grant while a cooldown applies to it (the global one, or one for the grant's target)",
  "proxy-grant-unregistered": "no grant on a proxy that is not registered (never, or removed)",
  "proxy-grant-unhealthy": "no grant on a proxy registered as unhealthy",
  "proxy-lease-id-reused": "a lease id is granted once (across all proxies, while it still resolves)",
  "proxy-report-unknown-lease":
    "a cooldown is started only by a report on a lease that resolves on that proxy: granted there, not released, not expired longer than the retention (`--cooldown-ms`) ago",
  "proxy-release-unknown-lease": "a release is recorded only for a lease that resolves on that proxy",
} as const;

/** Proxy rules. */
export const proxyRules: KindRules<keyof typeof RULES> = {
  kind: "proxy",
  rules: RULES,
  checker: ({ fold, cooldownMs: retentionMs }) => {
    /** Lease id -> proxy and expiry, for ids granted anywhere that may still resolve. */
    const leaseIds = new Map<string, { proxy: string; expiresAtMs: number }>();
    let pruneIdsAt = 1024;

    /** Why a lease id does not resolve on proxy `name` at `atMs`, in words. */
    const whyUnresolved = (leaseId: string, name: string, state: ProxyState, atMs: number): string => {
      const lease = state.leases.get(leaseId);
      if (lease !== undefined) return `which expired at ${lease.expiresAt}, more than the retention (${retentionMs} ms) before`;
      const known = leaseIds.get(leaseId);
      if (known === undefined) return "which was never granted (or is past retention)";
      if (known.proxy !== name) return `which was granted on proxy ${cell(known.proxy)}, not this one`;
      return atMs > known.expiresAtMs + retentionMs ? "which is past retention" : "which was released";
    };

    /** Drops leases past retention from one proxy's state and from the id index: they can never matter again. */
    const prune = (name: string, atMs: number): void => {
      fold.set("proxy", name, pruneProxy(fold.get("proxy", name), atMs, retentionMs));
      // The id index is scanned only when it has doubled since the last scan.
      if (leaseIds.size > pruneIdsAt) {
        for (const [id, lease] of leaseIds) if (atMs > lease.expiresAtMs + retentionMs) leaseIds.delete(id);
        pruneIdsAt = Math.max(1024, leaseIds.size * 2);
      }
    };

    return {
      check(event, name, state, { atMs }, report) {
        if (!isProxyEvent(event)) return;
        const before = state as ProxyState;
        switch (event.type) {
          case "ProxyLeaseGranted": {
            const d = event.data;
            const reg = before.registration;
            if (reg === null) {
              report("proxy-grant-unregistered", `lease ${d.leaseId} granted on a proxy that is not registered`);
            } else {
              if (!reg.healthy) report("proxy-grant-unhealthy", `lease ${d.leaseId} granted on a proxy registered as unhealthy`);
              if (inCooldown(before, d.target, atMs)) {
                const global = before.cooldowns.get("");
                const cooldown =
                  global !== undefined && atMs < global.untilMs
                    ? { what: "the global cooldown", until: global.untilAt }
                    : { what: `the cooldown for ${JSON.stringify(d.target)}`, until: before.cooldowns.get(d.target)!.untilAt };
                report(
                  "proxy-grant-in-cooldown",
                  `lease ${d.leaseId} for target ${JSON.stringify(d.target)} granted during ${cooldown.what} (until ${cooldown.until})`,
                );
              }
              const replaced = before.leases.get(d.leaseId);
              const active = activeLeases(before, atMs) - (replaced !== undefined && atMs < replaced.expiresAtMs ? 1 : 0) + 1;
              if (active > reg.maxLeases) {
                report("proxy-over-capacity", `lease ${d.leaseId} makes ${active} unexpired leases, above maxLeases ${reg.maxLeases}`);
              }
            }
            const earlier = leaseIds.get(d.leaseId);
            if (earlier !== undefined && atMs <= earlier.expiresAtMs + retentionMs) {
              report("proxy-lease-id-reused", `lease id ${d.leaseId} was already granted on proxy ${cell(earlier.proxy)}`);
            }
            leaseIds.set(d.leaseId, { proxy: name, expiresAtMs: instantMs(d.expiresAt) });
            prune(name, atMs);
            break;
          }
          case "ProxyCooldownStarted":
            if (resolvableLease(before, event.data.leaseId, atMs, retentionMs) === undefined) {
              report(
                "proxy-report-unknown-lease",
                `cooldown for target ${JSON.stringify(event.data.target)} started by a report on lease ${event.data.leaseId}, ${whyUnresolved(event.data.leaseId, name, before, atMs)}`,
              );
            }
            break;
          case "ProxyLeaseReleased":
            if (resolvableLease(before, event.data.leaseId, atMs, retentionMs) === undefined) {
              report(
                "proxy-release-unknown-lease",
                `release of lease ${event.data.leaseId}, ${whyUnresolved(event.data.leaseId, name, before, atMs)}`,
              );
            }
            break;
          default:
            break;
        }
      },
    };
  },
};
