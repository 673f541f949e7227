/**
 * A reference model of route placement, ported from a reference
 * in-memory table written in Go (its `Table`) as directly as TypeScript
 * allows: one in-memory table of leases by (route, fp, model), pins and seen
 * sets, consulted with the same order of `Acquire`. The model-based
 * simulation runs it beside the real service and compares every answer.
 *
 * Where docs/protocol.md and the issue deliberately differ from the seed, the
 * model follows them, and each difference is named here:
 * - seen sets survive a restart whole, and a move adds its target host
 *   (the seed rebuilds seen from lease rows only, and Move adds nothing);
 * - a reuse refreshes `lastUsed` only when the recorded one is at least
 *   `touchEveryMs` old, or when the acquire records something anyway (new
 *   candidates, a requestId) — the coalescing the issue allows; with
 *   `touchEveryMs: 0` every reuse refreshes it, as the seed does;
 * - a reuse on a pinned route refreshes `lastUsed` too (the seed does not,
 *   so a busy pinned conversation would idle out);
 * - the chooser is the contract's: fewest active leases across all routes
 *   then smallest name, rendezvous hashing, or (1.2) bounded-hash with the
 *   default balance factor 1.25 (the seed leaves it abstract);
 * - host capacity (1.1, the seed has none): a host with `maxLeases` is full
 *   when its active leases (all routes, however placed) number that many or
 *   more; the chooser skips full hosts, and when every healthy, non-draining
 *   candidate is full the acquire fails NO_HOST naming them (`full`, sorted).
 *   Pins, existing leases and inherited hosts ignore the cap.
 */
import { createHash } from "node:crypto";

/** A conversation key. */
export interface ModelKey {
  readonly route: string;
  readonly fp: string;
  readonly model: string;
}

/** One lease in the model. */
export interface ModelLease extends ModelKey {
  host: string;
  created: number;
  lastUsed: number;
}

/** The model's settings. */
export interface ModelOptions {
  readonly idleMs: number;
  readonly chooser: "least-loaded" | "rendezvous" | "bounded-hash";
  /** Minimum age of the recorded last use before a reuse refreshes it (0: every reuse, as the seed). */
  readonly touchEveryMs: number;
}

/** What the seed's event log records for a placement: the host left (`""` for none) and why. */
export interface ModelPlacement {
  readonly from: string;
  readonly reason: "new" | "unhealthy";
}

/** What `acquire` answers, with the placement it made (undefined for a reuse). */
export type ModelAcquire =
  | { readonly host: string; readonly reused: boolean; readonly placed: ModelPlacement | undefined }
  | { readonly error: "NO_HOST" | "PINNED_DOWN"; readonly full?: readonly string[] };

const keyOf = (k: ModelKey): string => JSON.stringify([k.route, k.fp, k.model]);

/** The seed's `Table`, with the differences listed in the module docs. */
export class RouteReferenceModel {
  private readonly hosts = new Map<string, { healthy: boolean; draining: boolean; maxLeases: number | null }>();
  private readonly leases = new Map<string, ModelLease>();
  private readonly pins = new Map<string, string>();
  private readonly seen = new Map<string, Set<string>>();

  constructor(private readonly options: ModelOptions) {}

  /** `host.set` (the whole state: no `maxLeases` is no limit). */
  setHost(host: string, healthy: boolean, draining: boolean, maxLeases: number | null = null): void {
    this.hosts.set(host, { healthy, draining, maxLeases });
  }

  /** Is `host` at or over its cap? */
  private full(host: string): boolean {
    const cap = this.hosts.get(host)?.maxLeases ?? null;
    return cap !== null && this.activeOn(host) >= cap;
  }

  private activeOn(host: string): number {
    return [...this.leases.values()].filter((l) => l.host === host).length;
  }

  private healthy(host: string): boolean {
    return this.hosts.get(host)?.healthy === true;
  }

  private draining(host: string): boolean {
    return this.hosts.get(host)?.draining === true;
  }

  private seenOf(route: string): Set<string> {
    let s = this.seen.get(route);
    if (s === undefined) {
      s = new Set();
      this.seen.set(route, s);
    }
    return s;
  }

  /** The seed's `Acquire`: pinned route, existing lease, inherit the route's host, else choose. */
  acquire(k: ModelKey, candidates: readonly string[], now: number, recordReuse = false): ModelAcquire {
    const seen = this.seenOf(k.route);
    const newCandidates = candidates.some((c) => !seen.has(c));
    for (const c of candidates) seen.add(c);

    let unhealthyFrom = "";
    const existing = this.leases.get(keyOf(k));

    // 1. Pinned route.
    const pin = this.pins.get(k.route);
    if (pin !== undefined) {
      if (!this.healthy(pin)) return { error: "PINNED_DOWN" };
      if (existing !== undefined) {
        this.touch(existing, now, newCandidates || recordReuse);
        return { host: pin, reused: true, placed: undefined };
      }
      this.place(k, pin, now);
      return { host: pin, reused: false, placed: { from: "", reason: "new" } };
    }

    // 2. Existing lease for k.
    if (existing !== undefined) {
      if (this.healthy(existing.host)) {
        this.touch(existing, now, newCandidates || recordReuse);
        return { host: existing.host, reused: true, placed: undefined };
      }
      unhealthyFrom = existing.host;
    }

    // The seed's side log records an unhealthy move instead of a fresh placement.
    const placed: ModelPlacement = unhealthyFrom === "" ? { from: "", reason: "new" } : { from: unhealthyFrom, reason: "unhealthy" };

    // 3. Inherit the route's own host.
    if (k.fp !== "") {
      const rl = this.leases.get(keyOf({ route: k.route, fp: "", model: k.model }));
      if (rl !== undefined && this.healthy(rl.host)) {
        this.place(k, rl.host, now);
        return { host: rl.host, reused: true, placed };
      }
    }

    // 4. Choose among healthy, non-draining candidates.
    const filtered = candidates.filter((c) => this.healthy(c) && !this.draining(c));
    const host = this.choose(
      k,
      filtered.filter((c) => !this.full(c)),
    );
    if (host === undefined) {
      if (filtered.length === 0) return { error: "NO_HOST" };
      return { error: "NO_HOST", full: [...new Set(filtered)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)) };
    }
    this.place(k, host, now);
    return { host, reused: false, placed };
  }

  private touch(lease: ModelLease, now: number, recordsAnyway: boolean): void {
    if (recordsAnyway || now - lease.lastUsed >= this.options.touchEveryMs) lease.lastUsed = now;
  }

  private place(k: ModelKey, host: string, now: number): void {
    this.leases.set(keyOf(k), { route: k.route, fp: k.fp, model: k.model, host, created: now, lastUsed: now });
    this.seenOf(k.route).add(host);
  }

  private choose(k: ModelKey, filtered: readonly string[]): string | undefined {
    if (filtered.length === 0) return undefined;
    if (this.options.chooser === "rendezvous") {
      let best: string | undefined;
      let bestScore = -1n;
      for (const h of filtered) {
        const d = createHash("sha256").update(`${k.route}\u0000${k.fp}\u0000${k.model}\u0000${h}`).digest();
        const score = d.readBigUInt64BE(0);
        if (score > bestScore || (score === bestScore && best !== undefined && h < best)) {
          best = h;
          bestScore = score;
        }
      }
      return best;
    }
    const load = (h: string) => [...this.leases.values()].filter((l) => l.host === h).length;
    if (this.options.chooser === "bounded-hash") {
      // The contract's text: hosts by descending SHA-256 score of route NUL model NUL host, the first within ceil(c (A + 1) / n).
      const hosts = [...new Set(filtered)];
      const bound = Math.ceil((1.25 * (hosts.reduce((sum, h) => sum + load(h), 0) + 1)) / hosts.length);
      const score = (h: string) => createHash("sha256").update(`${k.route}\u0000${k.model}\u0000${h}`).digest().readBigUInt64BE(0);
      const ordered = hosts.sort((a, b) => (score(a) > score(b) ? -1 : score(a) < score(b) ? 1 : a < b ? -1 : 1));
      return ordered.find((h) => load(h) + 1 <= bound);
    }
    let best: string | undefined;
    for (const h of filtered) {
      if (best === undefined || load(h) < load(best) || (load(h) === load(best) && h < best)) best = h;
    }
    return best;
  }

  /** The seed's `Move`: re-lease k onto host, whatever its health; answers the host it left. */
  move(k: ModelKey, host: string, now: number): { from: string; host: string } {
    const from = this.leases.get(keyOf(k))?.host ?? "";
    this.place(k, host, now);
    return { from, host };
  }

  /** The seed's `Candidates`. */
  candidates(route: string, hosts: readonly string[]): void {
    const seen = this.seenOf(route);
    for (const h of hosts) seen.add(h);
  }

  /** The seed's `Pin`: UNKNOWN_HOST for a host the route has not seen; drops leases on other hosts. */
  pin(route: string, host: string): "UNKNOWN_HOST" | undefined {
    if (!this.seenOf(route).has(host)) return "UNKNOWN_HOST";
    this.pins.set(route, host);
    for (const [key, l] of this.leases) if (l.route === route && l.host !== host) this.leases.delete(key);
    return undefined;
  }

  /** The seed's `Unpin`: leases stay. */
  unpin(route: string): void {
    this.pins.delete(route);
  }

  /** The seed's `Release`: drops every lease of the route, not the pin; answers how many. */
  release(route: string): number {
    let n = 0;
    for (const [key, l] of this.leases) {
      if (l.route === route) {
        this.leases.delete(key);
        n++;
      }
    }
    return n;
  }

  /** The seed's `ExpireIdle`: drops leases unused for more than the idle time; answers how many. */
  expireIdle(now: number): number {
    let n = 0;
    for (const [key, l] of this.leases) {
      if (now - l.lastUsed > this.options.idleMs) {
        this.leases.delete(key);
        n++;
      }
    }
    return n;
  }

  /** The seed's `Pinned`. */
  pinned(route: string): string {
    return this.pins.get(route) ?? "";
  }

  /** The seed's `Snapshot`: every lease sorted by route, fp, model. */
  snapshot(): ModelLease[] {
    const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    return [...this.leases.values()]
      .map((l) => ({ ...l }))
      .sort((a, b) => cmp(a.route, b.route) || cmp(a.fp, b.fp) || cmp(a.model, b.model));
  }

  /** `host.list`: every host ever set, with its cap and active leases. */
  hostList(): { host: string; healthy: boolean; draining: boolean; maxLeases: number | null; active: number; load: null }[] {
    // No host publishes a load in the model: every load is unknown.
    return [...this.hosts.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([host, s]) => ({
        host,
        healthy: s.healthy,
        draining: s.draining,
        maxLeases: s.maxLeases,
        active: this.activeOn(host),
        load: null,
      }));
  }
}
