/**
 * Selection across proxies (docs/protocol.md, Proxies), as pure functions of the
 * proxies' states at an instant: which proxies are considered, how each is
 * counted in `stats`, and the order in which eligible ones are asked.
 */
import type { ProxyStats } from "./events.ts";
import { activeLeases, compareNames, inCooldown, labelsMatch, type ProxyRegistration, type ProxyState } from "./state.ts";

/** A registered proxy as selection sees it. */
export interface Contender {
  readonly name: string;
  readonly registration: ProxyRegistration;
  readonly state: ProxyState;
}

/** The considered proxies, or the candidates that are not registered. */
export type Consideration = { readonly unknown: readonly string[] } | { readonly considered: readonly Contender[] };

/**
 * The considered set: `candidates` when given (each must be registered; a
 * name given twice counts once), else every registered proxy; then only those
 * whose labels hold every pair of `labels`.
 */
export function considerProxies(
  candidates: readonly string[] | undefined,
  labels: Readonly<Record<string, string>>,
  stateOf: (name: string) => ProxyState,
  everyState: () => Iterable<ProxyState>,
): Consideration {
  const pool: Contender[] = [];
  if (candidates !== undefined) {
    const unknown: string[] = [];
    for (const name of new Set(candidates)) {
      const state = stateOf(name);
      if (state.registration === null) unknown.push(name);
      else pool.push({ name, registration: state.registration, state });
    }
    if (unknown.length > 0) return { unknown };
  } else {
    for (const state of everyState())
      if (state.registration !== null) pool.push({ name: state.name, registration: state.registration, state });
  }
  return { considered: pool.filter((c) => labelsMatch(c.registration.labels, labels)) };
}

/** Loads beyond the projection that selection should count (grants this instance made or is making). */
export interface ExtraLoad {
  /** Leases granted but not yet folded into the projection, unexpired at `now`. */
  granted(name: string): number;
  /** Grants asked of the proxy and not yet answered. */
  asking(name: string): number;
}

const none: ExtraLoad = { granted: () => 0, asking: () => 0 };

/** The acquisition's stats and the eligible proxies in the order to ask them. */
export interface Ranking {
  readonly stats: ProxyStats;
  readonly eligible: readonly string[];
}

/**
 * Counts every considered proxy as unhealthy, in cooldown, at capacity (in
 * that order) or eligible, and orders the eligible ones: fewest active leases,
 * then lowest latency, then smallest name (UTF-16 code units, as JS `<`).
 * Grants still in flight count towards a proxy's load for the order only, so
 * concurrent acquisitions spread as if they had come one after another.
 */
export function rankProxies(considered: readonly Contender[], target: string, now: number, extra: ExtraLoad = none): Ranking {
  const stats: ProxyStats = { considered: considered.length, unhealthy: 0, inCooldown: 0, atCapacity: 0 };
  const eligible: { name: string; load: number; latencyMs: number }[] = [];
  for (const { name, registration, state } of considered) {
    if (!registration.healthy) {
      stats.unhealthy++;
      continue;
    }
    if (inCooldown(state, target, now)) {
      stats.inCooldown++;
      continue;
    }
    const active = activeLeases(state, now) + extra.granted(name);
    if (active >= registration.maxLeases) {
      stats.atCapacity++;
      continue;
    }
    eligible.push({ name, load: active + extra.asking(name), latencyMs: registration.latencyMs });
  }
  eligible.sort((a, b) => a.load - b.load || a.latencyMs - b.latencyMs || compareNames(a.name, b.name));
  return { stats, eligible: eligible.map((e) => e.name) };
}
