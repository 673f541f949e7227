/**
 * Choosers: which host a new lease goes to, among the healthy, non-draining
 * candidates. Pure and deterministic, so a route decision is replayable.
 */
import { hash } from "node:crypto";

/** A conversation key. */
export interface PlacementKey {
  readonly route: string;
  readonly fp: string;
  readonly model: string;
}

/** The choosers `--route-chooser` selects. */
export const CHOOSER_NAMES = ["least-loaded", "rendezvous"] as const;
/** One of {@link CHOOSER_NAMES}. */
export type ChooserName = (typeof CHOOSER_NAMES)[number];

/** Picks a host for a new lease. */
export interface RouteChooser {
  readonly name: ChooserName;
  /** Whether {@link RouteChooser.choose} reads `loads` (so callers can skip computing them). */
  readonly needsLoads: boolean;
  /**
   * Picks one of `eligible` (healthy, non-draining, distinct) for `key`, or
   * undefined when it is empty. `loads` holds active leases per host, all routes.
   */
  choose(key: PlacementKey, eligible: readonly string[], loads: ReadonlyMap<string, number>): string | undefined;
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

/** SHA-256 of the UTF-8 of `text`, one call (no Hash object per host). */
function sha256(text: string): Buffer {
  return hash("sha256", text, "buffer");
}

/** The chooser a configuration names. */
export function chooserNamed(name: ChooserName): RouteChooser {
  return name === "rendezvous" ? rendezvousChooser : leastLoadedChooser;
}
