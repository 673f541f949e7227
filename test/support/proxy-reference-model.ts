/**
 * A reference model of the proxy contract for model-based tests: a direct,
 * readable port of a reference in-memory store written in Go (its `Store`),
 * plus the thin discovery layer the seed's caller plays (a registry
 * of proxies that turns a request's `candidates`/`labels` into the candidate
 * list the store takes, and counts the unhealthy ones).
 *
 * It is deliberately naive and keeps the seed's shape (maps by id, by proxy,
 * cooldowns by (proxy, target)), so a reader can hold it next to the Go original.
 * The few places where docs/protocol.md differs from the seed are marked.
 */

/** One leasable proxy as the caller hands it to the store (seed: `Candidate`). */
export interface RefCandidate {
  readonly proxy: string;
  readonly maxLeases: number;
  readonly latencyMs: number;
}

/** A granted lease (seed: `Lease`). */
export interface RefLease {
  readonly id: string;
  readonly proxy: string;
  readonly target: string;
  readonly expiresAtMs: number;
}

/** Why acquisitions did or did not succeed (seed: `AcquireStats`). */
export interface RefStoreStats {
  considered: number;
  atCapacity: number;
  inCooldown: number;
}

/** The seed's `Store`, with the clock and the id generator injected. */
export class RefLeaseStore {
  readonly byId = new Map<string, RefLease>();
  readonly byProxy = new Map<string, Map<string, RefLease>>();
  /** Cooldown end by (proxy, target); the key is `JSON.stringify([proxy, target])`. */
  readonly cooldowns = new Map<string, number>();
  /**
   * The 1.1 addition the seed lacks: each pair's latest cooldown end and its
   * place in a streak (a report within cooldownMs of the previous end, or
   * before it, goes on with the streak). Kept apart from `cooldowns`, which
   * the seed's sweep prunes.
   */
  readonly streaks = new Map<string, { until: number; streak: number }>();

  constructor(
    readonly cooldownWindowMs: number,
    private readonly now: () => number,
    private readonly newId: () => string,
  ) {}

  /** Selects the least-loaded eligible candidate (ties: lowest latency, then name) and grants a lease on it. */
  acquire(candidates: readonly RefCandidate[], target: string, ttlMs: number): { lease: RefLease | null; stats: RefStoreStats } {
    const stats: RefStoreStats = { considered: candidates.length, atCapacity: 0, inCooldown: 0 };
    if (ttlMs <= 0) throw new Error(`non-positive TTL ${ttlMs}`);
    const now = this.now();
    const eligible: { cand: RefCandidate; active: number }[] = [];
    for (const c of candidates) {
      if (this.inCooldown(c.proxy, target, now)) {
        stats.inCooldown++;
        continue;
      }
      const active = this.activeCount(c.proxy, now);
      if (active >= c.maxLeases) {
        stats.atCapacity++;
        continue;
      }
      eligible.push({ cand: c, active });
    }
    if (eligible.length === 0) return { lease: null, stats };
    // docs/protocol.md: names compare by UTF-16 code units (JS <), where the seed's
    // strings.Compare compares UTF-8 bytes (they differ only for names mixing
    // U+E000..U+FFFF with characters beyond U+FFFF).
    eligible.sort(
      (a, b) =>
        a.active - b.active ||
        a.cand.latencyMs - b.cand.latencyMs ||
        (a.cand.proxy < b.cand.proxy ? -1 : a.cand.proxy > b.cand.proxy ? 1 : 0),
    );
    const best = eligible[0]!.cand;
    const lease: RefLease = { id: this.newId(), proxy: best.proxy, target, expiresAtMs: now + ttlMs };
    this.byId.set(lease.id, lease);
    let mine = this.byProxy.get(lease.proxy);
    if (mine === undefined) this.byProxy.set(lease.proxy, (mine = new Map<string, RefLease>()));
    mine.set(lease.id, lease);
    return { lease, stats };
  }

  /** Drops a lease early; unknown or expired ids are a no-op. */
  release(id: string): void {
    this.drop(id);
  }

  /**
   * Records a report: rate_limited and banned put (proxy, target) in cooldown,
   * target from the report, else the lease's own, else global. Returns the
   * cooldown's end when one was recorded, "unknown" when the id does not resolve.
   */
  report(id: string, result: "ok" | "rate_limited" | "banned", target: string): number | null | "unknown" {
    const lease = this.byId.get(id);
    if (lease === undefined) return "unknown";
    if (result === "ok") return null;
    const scope = target === "" ? lease.target : target;
    const key = JSON.stringify([lease.proxy, scope]);
    const previous = this.streaks.get(key);
    const now = this.now();
    const streak = previous !== undefined && now - previous.until < this.cooldownWindowMs ? previous.streak + 1 : 1;
    // With the default backoff factor of 1 every cooldown lasts the window, as in the seed.
    const until = now + this.cooldownWindowMs;
    this.cooldowns.set(key, until);
    this.streaks.set(key, { until, streak });
    return until;
  }

  /** Unexpired leases on one proxy. */
  activeCount(proxy: string, now = this.now()): number {
    let n = 0;
    for (const lease of this.byProxy.get(proxy)?.values() ?? []) if (now < lease.expiresAtMs) n++;
    return n;
  }

  /** Drops leases past their retention window and elapsed cooldowns. */
  sweep(now: number): void {
    for (const [id, lease] of this.byId) if (now > lease.expiresAtMs + this.cooldownWindowMs) this.drop(id);
    for (const [key, until] of this.cooldowns) if (now > until) this.cooldowns.delete(key);
  }

  /** The global cooldown always applies; a target-scoped one only to acquisitions for that target. */
  inCooldown(proxy: string, target: string, now: number): boolean {
    const global = this.cooldowns.get(JSON.stringify([proxy, ""]));
    if (global !== undefined && now < global) return true;
    if (target === "") return false;
    const scoped = this.cooldowns.get(JSON.stringify([proxy, target]));
    return scoped !== undefined && now < scoped;
  }

  private drop(id: string): void {
    const lease = this.byId.get(id);
    if (lease === undefined) return;
    this.byId.delete(id);
    const mine = this.byProxy.get(lease.proxy)!;
    mine.delete(id);
    if (mine.size === 0) this.byProxy.delete(lease.proxy);
  }
}

/** A registered proxy in the reference registry. */
export interface RefProxy {
  readonly maxLeases: number;
  readonly latencyMs: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly healthy: boolean;
}

/** `stats` as the contract shapes them. */
export interface RefStats {
  readonly considered: number;
  readonly unhealthy: number;
  readonly inCooldown: number;
  readonly atCapacity: number;
}

/** What the model answers: a reply, or an error code with its details. */
export type RefAnswer =
  | { readonly ok: true; readonly reply: unknown }
  | { readonly ok: false; readonly code: string; readonly details?: Record<string, unknown> };

/** A `proxy.acquire` request as the model takes it (defaults already applied). */
export interface RefAcquire {
  readonly ttlMs: number;
  readonly target: string;
  readonly candidates?: readonly string[] | undefined;
  readonly labels: Readonly<Record<string, string>>;
  readonly requestId?: string | undefined;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The whole proxy contract as the seed's caller would build it on the store:
 * a registry of proxies, the candidate and label filter, the unhealthy count,
 * and the requestId memory of acquisitions. The store is swept before every
 * operation: docs/protocol.md fixes retention as "until cooldownMs after expiry",
 * which is the seed's answer when its sweep has just run.
 */
export class RefProxyService {
  readonly registry = new Map<string, RefProxy>();
  readonly store: RefLeaseStore;
  private readonly acquisitions = new Map<string, { reply: unknown; atMs: number }>();

  constructor(
    cooldownMs: number,
    private readonly now: () => number,
    newId: () => string,
    private readonly dedupWindowMs: number,
  ) {
    this.store = new RefLeaseStore(cooldownMs, now, newId);
  }

  register(proxy: string, p: RefProxy): RefAnswer {
    this.registry.set(proxy, p);
    return { ok: true, reply: { proxy } };
  }

  remove(proxy: string): RefAnswer {
    if (!this.registry.has(proxy)) return { ok: false, code: "UNKNOWN_PROXY", details: { proxies: [proxy] } };
    this.registry.delete(proxy);
    return { ok: true, reply: { proxy } };
  }

  acquire(req: RefAcquire): RefAnswer {
    const now = this.now();
    this.store.sweep(now);
    if (req.requestId !== undefined) {
      const earlier = this.acquisitions.get(req.requestId);
      if (earlier !== undefined && earlier.atMs >= now - this.dedupWindowMs) return { ok: true, reply: earlier.reply };
    }
    let names: string[];
    if (req.candidates !== undefined) {
      names = [...new Set(req.candidates)];
      const unknown = names.filter((n) => !this.registry.has(n));
      if (unknown.length > 0) return { ok: false, code: "UNKNOWN_PROXY", details: { proxies: unknown } };
    } else {
      names = [...this.registry.keys()];
    }
    const considered = names.filter((n) => {
      const labels = this.registry.get(n)!.labels;
      return Object.entries(req.labels).every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v);
    });
    const healthy = considered.filter((n) => this.registry.get(n)!.healthy);
    const candidates = healthy.map((n) => ({
      proxy: n,
      maxLeases: this.registry.get(n)!.maxLeases,
      latencyMs: this.registry.get(n)!.latencyMs,
    }));
    const { lease, stats } = this.store.acquire(candidates, req.target, req.ttlMs);
    const full: RefStats = {
      considered: considered.length,
      unhealthy: considered.length - healthy.length,
      inCooldown: stats.inCooldown,
      atCapacity: stats.atCapacity,
    };
    if (lease === null) return { ok: false, code: "NO_MATCH", details: { stats: full } };
    const reply = { lease: { id: lease.id, proxy: lease.proxy, target: lease.target, expiresAt: iso(lease.expiresAtMs) }, stats: full };
    if (req.requestId !== undefined) this.acquisitions.set(req.requestId, { reply, atMs: now });
    return { ok: true, reply };
  }

  release(leaseId: string): RefAnswer {
    this.store.sweep(this.now());
    this.store.release(leaseId);
    return { ok: true, reply: {} };
  }

  report(leaseId: string, result: "ok" | "rate_limited" | "banned", target: string): RefAnswer {
    this.store.sweep(this.now());
    const until = this.store.report(leaseId, result, target);
    if (until === "unknown") return { ok: false, code: "UNKNOWN_LEASE" };
    return { ok: true, reply: until === null ? {} : { cooldownUntilAt: iso(until) } };
  }

  list(): RefAnswer {
    const now = this.now();
    this.store.sweep(now);
    const names = [...this.registry.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const proxies = names.map((proxy) => {
      const p = this.registry.get(proxy)!;
      const cooldowns: { target: string; untilAt: string; streak: number }[] = [];
      for (const [key, until] of this.store.cooldowns) {
        const [owner, target] = JSON.parse(key) as [string, string];
        if (owner === proxy && now < until) cooldowns.push({ target, untilAt: iso(until), streak: this.store.streaks.get(key)!.streak });
      }
      cooldowns.sort((a, b) => (a.target < b.target ? -1 : a.target > b.target ? 1 : 0));
      return {
        proxy,
        maxLeases: p.maxLeases,
        latencyMs: p.latencyMs,
        labels: p.labels,
        healthy: p.healthy,
        active: this.store.activeCount(proxy, now),
        cooldowns,
      };
    });
    return { ok: true, reply: { proxies } };
  }

  counts(): RefAnswer {
    const now = this.now();
    this.store.sweep(now);
    const counts: Record<string, number> = {};
    for (const proxy of this.registry.keys()) {
      const n = this.store.activeCount(proxy, now);
      if (n > 0) Object.defineProperty(counts, proxy, { value: n, enumerable: true, writable: true, configurable: true });
    }
    return { ok: true, reply: { counts } };
  }
}
