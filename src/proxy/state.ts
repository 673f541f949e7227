/**
 * The proxy projection: a pure fold of one proxy's history into its state
 * (registration, leases, cooldowns), and the pure questions every reader asks
 * of that state at an instant (active leases, cooldown, retention). Shared by
 * the proxy actor, the selector's read model and the tools.
 *
 * Time is arithmetic: a lease is active while `now < expiresAt`, a cooldown
 * while `now < untilAt`, and an unreleased lease resolves for `report` while
 * `now <= expiresAt + retention` (a sweep drops it only once
 * `now > expiresAt + retention`). Nothing here depends on when memory is pruned.
 */
import type { HistoryEntry } from "../events/envelope.ts";
import type { ProxyLeaseGranted, ProxyStats } from "./events.ts";
import { proxyEventSchemas } from "./events.ts";
import { eventIn } from "../events/kind-events.ts";
import { instantMs } from "../events/envelope.ts";
import type { ProxyInfo } from "../contract/messages.ts";

/** What a registration says about a proxy. */
export interface ProxyRegistration {
  readonly maxLeases: number;
  readonly latencyMs: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly healthy: boolean;
}

/** A granted, unreleased lease (expired or not: expiry is a function of now). */
export interface ProxyLease {
  readonly id: string;
  readonly target: string;
  readonly ttlMs: number;
  readonly expiresAt: string;
  readonly expiresAtMs: number;
  /** The principal whose request was granted it; absent when unknown. Only it, or an operator, may release or report on it. */
  readonly by?: string;
}

/** A cooldown of the proxy for one target (`""` = global). */
export interface ProxyCooldown {
  readonly untilAt: string;
  readonly untilMs: number;
  /** Its place in the pair's streak of cooldowns (1: the first). */
  readonly streak: number;
}

/** One proxy's state. */
export interface ProxyState {
  readonly name: string;
  /** The current registration; null when never registered or removed. */
  readonly registration: ProxyRegistration | null;
  /** Unreleased leases by id, including expired ones still within retention (until pruned). */
  readonly leases: ReadonlyMap<string, ProxyLease>;
  /** Cooldowns by target (`""` = global), elapsed ones included until pruned. */
  readonly cooldowns: ReadonlyMap<string, ProxyCooldown>;
}

const noLeases: ReadonlyMap<string, ProxyLease> = new Map();
const noCooldowns: ReadonlyMap<string, ProxyCooldown> = new Map();

/** The state of a proxy with no history. */
export function initialProxyState(name: string): ProxyState {
  return { name, registration: null, leases: noLeases, cooldowns: noCooldowns };
}

/**
 * Applies one history entry. Messages that do not parse, and types no proxy
 * writes, change nothing: the proxy contract has no corrupt state, and every
 * rule is re-checked against the state at decision time anyway.
 */
export function evolveProxy(state: ProxyState, entry: HistoryEntry): ProxyState {
  const event = eventIn(proxyEventSchemas, entry);
  if (event === undefined) return state;
  switch (event.type) {
    case "ProxyRegistered": {
      const d = event.data;
      return {
        ...state,
        registration: { maxLeases: d.maxLeases, latencyMs: d.latencyMs, labels: ownLabels(d.labels), healthy: d.healthy },
      };
    }
    case "ProxyRemoved":
      // Leases and cooldowns stay: they keep resolving, and count again if the proxy comes back.
      return { ...state, registration: null };
    case "ProxyLeaseGranted": {
      const d = event.data;
      const leases = new Map(state.leases);
      leases.set(d.leaseId, {
        id: d.leaseId,
        target: d.target,
        ttlMs: d.ttlMs,
        expiresAt: d.expiresAt,
        expiresAtMs: instantMs(d.expiresAt),
        ...(event.by === undefined ? {} : { by: event.by }),
      });
      return { ...state, leases };
    }
    case "ProxyLeaseReleased": {
      if (!state.leases.has(event.data.leaseId)) return state;
      const leases = new Map(state.leases);
      leases.delete(event.data.leaseId);
      return { ...state, leases };
    }
    case "ProxyCooldownStarted": {
      const d = event.data;
      // The pair's cooldown is set to the reported end (never merged with an older one).
      const cooldowns = new Map(state.cooldowns);
      cooldowns.set(d.target, { untilAt: d.untilAt, untilMs: instantMs(d.untilAt), streak: d.streak ?? 1 });
      return { ...state, cooldowns };
    }
    default:
      return state;
  }
}

/** Labels as own properties only, so a label named like an Object.prototype member is an ordinary label. */
export function ownLabels(labels: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  return Object.fromEntries(Object.entries(labels));
}

/** Does `labels` hold every key/value pair of `required`? */
export function labelsMatch(labels: Readonly<Record<string, string>>, required: Readonly<Record<string, string>>): boolean {
  for (const [key, value] of Object.entries(required)) {
    if (!Object.hasOwn(labels, key) || labels[key] !== value) return false;
  }
  return true;
}

/** Do two label sets hold exactly the same pairs? */
export function sameLabels(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  return Object.keys(a).length === Object.keys(b).length && labelsMatch(a, b);
}

/** Unexpired, unreleased leases at `now`. */
export function activeLeases(state: ProxyState, now: number): number {
  let n = 0;
  for (const lease of state.leases.values()) if (now < lease.expiresAtMs) n++;
  return n;
}

/**
 * The cooldown key of a proxy-wide cooldown (a report without a target, or
 * acquisitions without one): it applies to every target.
 */
export const GLOBAL_COOLDOWN = "";

/**
 * Is the proxy cooling down for an acquisition for `target` at `now`? The
 * global cooldown always applies; a target-scoped one only to that target (an
 * acquisition without a target sees only the global one).
 */
export function inCooldown(state: ProxyState, target: string, now: number): boolean {
  const global = state.cooldowns.get(GLOBAL_COOLDOWN);
  if (global !== undefined && now < global.untilMs) return true;
  if (target === GLOBAL_COOLDOWN) return false;
  const scoped = state.cooldowns.get(target);
  return scoped !== undefined && now < scoped.untilMs;
}

/** The lease `leaseId` if it still resolves at `now` (unreleased, and not expired longer than `retentionMs` ago). */
export function resolvableLease(state: ProxyState, leaseId: string, now: number, retentionMs: number): ProxyLease | undefined {
  const lease = state.leases.get(leaseId);
  return lease !== undefined && now <= lease.expiresAtMs + retentionMs ? lease : undefined;
}

/** Active cooldowns at `now`, sorted by target. */
export function activeCooldowns(state: ProxyState, now: number): { target: string; untilAt: string; streak: number }[] {
  const out: { target: string; untilAt: string; streak: number }[] = [];
  for (const [target, cooldown] of state.cooldowns) {
    if (now < cooldown.untilMs) out.push({ target, untilAt: cooldown.untilAt, streak: cooldown.streak });
  }
  return out.sort((a, b) => compareNames(a.target, b.target));
}

/**
 * Drops what can never matter again at or after `now`: leases past retention
 * and cooldowns that ended more than `retentionMs` (the server's cooldownMs)
 * ago — until then a new report continues their streak. Every answer at any instant >= `now` is the same for
 * the pruned state as for the original. Returns `state` itself when nothing goes.
 */
export function pruneProxy(state: ProxyState, now: number, retentionMs: number): ProxyState {
  let leases: Map<string, ProxyLease> | undefined;
  for (const [id, lease] of state.leases) {
    if (now > lease.expiresAtMs + retentionMs) (leases ??= new Map(state.leases)).delete(id);
  }
  let cooldowns: Map<string, ProxyCooldown> | undefined;
  for (const [target, cooldown] of state.cooldowns) {
    if (now >= cooldown.untilMs + retentionMs) (cooldowns ??= new Map(state.cooldowns)).delete(target);
  }
  if (leases === undefined && cooldowns === undefined) return state;
  return { ...state, leases: leases ?? state.leases, cooldowns: cooldowns ?? state.cooldowns };
}

/** Orders strings by UTF-16 code units, as JS `<` does (the contract's name order). */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** One entry of `proxy.list`, as the contract types it. */
export type ProxyView = ProxyInfo;

/** The `proxy.list` entry of a registered proxy at `now`. */
export function proxyView(state: ProxyState, registration: ProxyRegistration, now: number): ProxyView {
  return {
    proxy: state.name,
    maxLeases: registration.maxLeases,
    latencyMs: registration.latencyMs,
    labels: registration.labels,
    healthy: registration.healthy,
    active: activeLeases(state, now),
    cooldowns: activeCooldowns(state, now),
  };
}

/** The wire shape of a granted lease (`lease` in `proxy.acquire`'s reply). */
export interface ProxyLeaseView {
  readonly id: string;
  readonly proxy: string;
  readonly target: string;
  readonly expiresAt: string;
}

/** The reply of a successful `proxy.acquire`. */
export interface ProxyAcquireReply {
  readonly lease: ProxyLeaseView;
  readonly stats: ProxyStats;
}

/** The reply a grant recorded on proxy `name` owes its acquisition (also a repeated requestId's answer). */
export function acquireReplyOf(name: string, granted: ProxyLeaseGranted["data"]): ProxyAcquireReply {
  return {
    lease: { id: granted.leaseId, proxy: name, target: granted.target, expiresAt: granted.expiresAt },
    stats: granted.stats ?? zeroStats(),
  };
}

/** Stats with every count zero. */
export function zeroStats(): ProxyStats {
  return { considered: 0, unhealthy: 0, inCooldown: 0, atCapacity: 0 };
}
