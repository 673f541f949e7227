/**
 * Choosers: which host a new lease goes to, among the healthy, non-draining
 * candidates that are not full. Pure and deterministic over what the route
 * command carries (active leases per host, and the host loads known when
 * the command was sent), so a route decision is replayable.
 */
import { hash } from "node:crypto";
import type { RouteChooserName } from "../contract/route-choosers.ts";

/** A conversation key. */
export interface PlacementKey {
  readonly route: string;
  readonly fp: string;
  readonly model: string;
}

/** Picks a host for a new lease. */
export interface RouteChooser {
  readonly name: RouteChooserName;
  /** Whether {@link RouteChooser.choose} reads `loads` (so callers can skip computing them). */
  readonly needsLoads: boolean;
  /**
   * Picks one of `eligible` (healthy, non-draining, not full; a name given
   * twice counts once) for `key`, or undefined when it is empty. `loads`
   * holds active leases per host, all routes; `hostLoads` the loads the hosts
   * published, as known when the command was sent (absent: unknown).
   */
  choose(
    key: PlacementKey,
    eligible: readonly string[],
    loads: ReadonlyMap<string, number>,
    hostLoads?: ReadonlyMap<string, number>,
  ): string | undefined;
}

/** docs/protocol.md's default: the fewest active leases across all routes, ties by the smallest name (JS `<`). */
export const leastLoadedChooser: RouteChooser = {
  name: "least-loaded",
  needsLoads: true,
  choose(_key, eligible, loads) {
    let best: string | undefined;
    let bestLoad = Infinity;
    for (const host of eligible) {
      const load = loads.get(host) ?? 0;
      if (load < bestLoad || (load === bestLoad && best !== undefined && host < best)) {
        best = host;
        bestLoad = load;
      }
    }
    return best;
  },
};

/**
 * Rendezvous (highest random weight) hashing: the score of a host for a key is
 * the first 8 bytes of SHA-256 over the UTF-8 of
 * `route NUL fp NUL model NUL host`, read as an unsigned big-endian integer;
 * the highest score wins (ties, never seen in practice, by the smallest name).
 * Any router that computes the same function over the same candidates agrees
 * on the host without asking anyone, and removing a host moves only its keys.
 */
export const rendezvousChooser: RouteChooser = rendezvousOver(sha256);

/**
 * {@link rendezvousChooser} over another digest (its first 8 bytes are the
 * score): ties of SHA-256 scores take about 2^32 hashes to find, so the
 * tie-breaking is tested over a digest that ties on purpose.
 */
export function rendezvousOver(digest: (text: string) => Buffer): RouteChooser {
  return {
    name: "rendezvous",
    needsLoads: false,
    choose(key, eligible) {
      // The 64-bit score compared as two 32-bit halves: no BigInt per host.
      const prefix = `${key.route}\u0000${key.fp}\u0000${key.model}\u0000`;
      let best: string | undefined;
      let bestHigh = -1;
      let bestLow = -1;
      for (const host of eligible) {
        const score = digest(prefix + host);
        const high = score.readUInt32BE(0);
        const low = score.readUInt32BE(4);
        if (high > bestHigh || (high === bestHigh && (low > bestLow || (low === bestLow && best !== undefined && host < best)))) {
          best = host;
          bestHigh = high;
          bestLow = low;
        }
      }
      return best;
    },
  };
}

/** The rendezvous score of `host` for `key` (see {@link rendezvousChooser}). */
export function rendezvousScore(key: PlacementKey, host: string): bigint {
  return sha256(`${key.route}\u0000${key.fp}\u0000${key.model}\u0000${host}`).readBigUInt64BE(0);
}

/**
 * docs/protocol.md's `least-load`: hosts with a known published load first,
 * lowest load first; ties, and hosts whose load is unknown (after every
 * known one), by fewest active route leases, then the smallest name.
 */
export const leastLoadChooser: RouteChooser = {
  name: "least-load",
  needsLoads: true,
  choose(_key, eligible, loads, hostLoads) {
    let best: string | undefined;
    // Unknown sorts after every known load.
    let bestLoad = Infinity;
    let bestCount = Infinity;
    for (const host of eligible) {
      const load = hostLoads?.get(host) ?? Infinity;
      const count = loads.get(host) ?? 0;
      if (load < bestLoad || (load === bestLoad && (count < bestCount || (count === bestCount && best !== undefined && host < best)))) {
        best = host;
        bestLoad = load;
        bestCount = count;
      }
    }
    return best;
  },
};

/** bounded-hash's balance factor when none is configured (HAProxy's and Envoy's common setting). */
export const DEFAULT_HASH_BALANCE_FACTOR = 1.25;

/**
 * docs/protocol.md's `bounded-hash`: consistent hashing with bounded loads,
 * keyed by `(route, model)` so a route's conversations share hosts (and
 * their prompt caches). The hosts in descending order of the first 8 bytes
 * of SHA-256 over `route NUL model NUL host` (ties by the smallest name);
 * the first whose active leases plus one are at most `ceil(c * (A + 1) / n)`
 * takes the lease, `A` being the active leases of the `n` hosts. One always
 * does when `c > 1`: were every host at the bound, `A` would exceed `c(A + 1)`.
 */
export function boundedHashChooser(balanceFactor: number, digest: (text: string) => Buffer = sha256): RouteChooser {
  if (!(balanceFactor > 1) || !Number.isFinite(balanceFactor))
    throw new RangeError(`the hash balance factor must be a number > 1, got ${balanceFactor}`);
  const rankings = new Rankings(digest);
  return {
    name: "bounded-hash",
    needsLoads: true,
    choose(key, eligible, loads) {
      const hosts = eligible.length < 2 ? eligible : [...new Set(eligible)];
      if (hosts.length === 0) return undefined;
      let active = 0;
      for (const host of hosts) active += loads.get(host) ?? 0;
      const bound = Math.ceil((balanceFactor * (active + 1)) / hosts.length);
      for (const host of rankings.of(key, hosts)) if ((loads.get(host) ?? 0) + 1 <= bound) return host;
      return undefined;
    },
  };
}

/** Rankings remembered at most (each is one route, model and candidate set; cleared whole when full). */
const MAX_RANKINGS = 4096;

/**
 * bounded-hash's order of hosts for a (route, model) and a set of
 * candidates, remembered: the order depends on them alone, not on the
 * leases, and a route asks with the same candidates again and again, so a
 * placement hashes each host once per (route, model, candidates) instead of
 * every time (1,000 hashes for a 1,000-host fleet). A memo: the same answers.
 */
class Rankings {
  private readonly known = new Map<string, readonly string[]>();

  constructor(private readonly digest: (text: string) => Buffer) {}

  /** `hosts` (distinct) in descending score for the key's `(route, model)`, ties by the smallest name. */
  of(key: Pick<PlacementKey, "route" | "model">, hosts: readonly string[]): readonly string[] {
    // JSON keeps names apart whatever characters they hold.
    const memoKey = JSON.stringify([key.route, key.model, hosts]);
    let ranked = this.known.get(memoKey);
    if (ranked !== undefined) return ranked;
    const prefix = `${key.route}\u0000${key.model}\u0000`;
    const scored = hosts.map((host) => {
      const score = this.digest(prefix + host);
      return { host, high: score.readUInt32BE(0), low: score.readUInt32BE(4) };
    });
    scored.sort((a, b) => b.high - a.high || b.low - a.low || (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
    ranked = scored.map((s) => s.host);
    if (this.known.size >= MAX_RANKINGS) this.known.clear();
    this.known.set(memoKey, ranked);
    return ranked;
  }
}

/** The bounded-hash score of `host` for the key's `(route, model)` (see {@link boundedHashChooser}). */
export function boundedHashScore(key: Pick<PlacementKey, "route" | "model">, host: string): bigint {
  return sha256(`${key.route}\u0000${key.model}\u0000${host}`).readBigUInt64BE(0);
}

/** SHA-256 of the UTF-8 of `text`, one call (no Hash object per host). */
function sha256(text: string): Buffer {
  return hash("sha256", text, "buffer");
}

/** Settings of the choosers that take any. */
export interface ChooserOptions {
  /** bounded-hash's `c` (a number > 1; default {@link DEFAULT_HASH_BALANCE_FACTOR}). */
  readonly hashBalanceFactor?: number;
}

/** The chooser a configuration names. */
export function chooserNamed(name: RouteChooserName, options: ChooserOptions = {}): RouteChooser {
  switch (name) {
    case "rendezvous":
      return rendezvousChooser;
    case "least-load":
      return leastLoadChooser;
    case "bounded-hash":
      return boundedHashChooser(options.hashBalanceFactor ?? DEFAULT_HASH_BALANCE_FACTOR);
    case "least-loaded":
      return leastLoadedChooser;
  }
}
