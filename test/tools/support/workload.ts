/**
 * A simulated workload: seeded random traffic of every kind (locks acquired,
 * renewed, released and reset; proxies registered, leased, released,
 * reported and removed; hosts set healthy, unhealthy or draining; routes
 * placed, moved, pinned, unpinned and released; idle expiry and retention
 * sweeps) through an in-memory service, so the history it leaves is one the
 * real service writes. Requests run in small concurrent batches, as many
 * clients would send them; host changes run alone, because a `host.set`
 * racing a `route.acquire` is a genuine race the audit reports (see README).
 */
import { startSimService, type SimService } from "./sim-service.ts";
import type { ServiceConfig } from "../../../src/config.ts";

/** Settings of a workload. */
export interface WorkloadOptions {
  /** Stop once the stream holds at least this many events. */
  readonly events: number;
  readonly seed?: number;
  /** Requests sent at once. */
  readonly batch?: number;
  /** Called between rounds, with nothing in flight (tests look at the service here). */
  readonly onRound?: (sim: SimService, round: number) => Promise<void>;
}

/** The service settings a workload runs with (short enough for expiry, cooldowns and idling to happen often). */
export const WORKLOAD_SETTINGS: Partial<ServiceConfig> = {
  cooldownMs: 20_000,
  routeIdleMs: 60_000,
  lockTtlMs: 10_000,
  maxTtlMs: 30_000,
};

/** A small seeded PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Runs the workload on a new in-memory service; returns it (stopped) with its log. */
export async function simulateWorkload(options: WorkloadOptions): Promise<SimService> {
  const random = prng(options.seed ?? 1);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
  const sim = await startSimService(WORKLOAD_SETTINGS);
  const hosts = Array.from({ length: 6 }, (_, i) => `h${i}`);
  const proxies = Array.from({ length: 8 }, (_, i) => `p${i}`);
  const routes = Array.from({ length: 30 }, (_, i) => `r${i}`);
  const locks = Array.from({ length: 40 }, (_, i) => `lock/${i}`);
  const owners = ["w1", "w2", "w3", "w4"];
  const targets = ["", "t1", "t2", "t3"];
  const held = new Map<string, { owner: string; etag: string }>();
  const leases: string[] = [];

  const register = (proxy: string) =>
    sim.call("proxy.register", {
      proxy,
      maxLeases: 1 + int(5),
      latencyMs: int(200),
      labels: { region: pick(["eu", "us"]) },
      healthy: random() < 0.9,
    });
  for (const p of proxies) await register(p);
  for (const h of hosts) await sim.call("host.set", { host: h, healthy: true });

  const ops: [number, () => Promise<unknown>][] = [
    [
      20,
      async () => {
        const name = pick(locks);
        const owner = pick(owners);
        const r = await sim.call("lock.acquire", { name, owner, ttlMs: 1000 + int(29_000) });
        if (r.ok) held.set(name, { owner, etag: (r.reply as { lease: { etag: string } }).lease.etag });
      },
    ],
    [
      10,
      async () => {
        const name = pick(locks);
        const h = held.get(name);
        if (h === undefined) return;
        const r = await sim.call("lock.renew", {
          name,
          owner: h.owner,
          etag: h.etag,
          ...(random() < 0.5 ? { ttlMs: 1000 + int(20_000) } : {}),
        });
        if (r.ok) held.set(name, { owner: h.owner, etag: (r.reply as { lease: { etag: string } }).lease.etag });
      },
    ],
    [
      8,
      async () => {
        const name = pick(locks);
        const h = held.get(name);
        if (h === undefined) return;
        await sim.call("lock.release", { name, etag: h.etag });
        held.delete(name);
      },
    ],
    [0.3, () => sim.call("lock.reset", { name: pick(locks) })],
    [
      20,
      async () => {
        const body: Record<string, unknown> = { ttlMs: 1000 + int(20_000), target: pick(targets) };
        if (random() < 0.2) body.labels = { region: pick(["eu", "us"]) };
        if (random() < 0.2) body.candidates = [pick(proxies), pick(proxies)];
        const r = await sim.call("proxy.acquire", body);
        if (r.ok) leases.push((r.reply as { lease: { id: string } }).lease.id);
      },
    ],
    [
      10,
      async () => {
        if (leases.length === 0) return;
        const [id] = leases.splice(int(leases.length), 1);
        await sim.call("proxy.release", { leaseId: id });
      },
    ],
    [
      5,
      async () => {
        if (leases.length === 0) return;
        const result = random() < 0.6 ? "ok" : pick(["rate_limited", "banned"]);
        await sim.call("proxy.report", { leaseId: pick(leases), result, ...(random() < 0.3 ? { target: pick(targets) } : {}) });
      },
    ],
    [1, () => register(pick(proxies))],
    [0.2, () => sim.call("proxy.remove", { proxy: pick(proxies) })],
    [
      22,
      () =>
        sim.call("route.acquire", {
          route: pick(routes),
          fp: pick(["", "", "a", "b", "c"]),
          model: pick(["m1", "m2"]),
          candidates: hosts.filter(() => random() < 0.5),
        }),
    ],
    [0.8, () => sim.call("route.move", { route: pick(routes), fp: pick(["", "a", "b"]), model: pick(["m1", "m2"]), host: pick(hosts) })],
    [0.8, () => sim.call("route.pin", { route: pick(routes), host: pick(hosts) })],
    [0.8, () => sim.call("route.unpin", { route: pick(routes) })],
    [0.5, () => sim.call("route.release", { route: pick(routes) })],
    // Hosts never set: a route sees them (RouteCandidatesSeen) but can never be placed there.
    [0.5, () => sim.call("route.candidates", { route: pick(routes), hosts: [pick(hosts), `spare${int(20)}`] })],
  ];
  const totalWeight = ops.reduce((n, [w]) => n + w, 0);
  const chooseOp = () => {
    let x = random() * totalWeight;
    for (const [w, op] of ops) if ((x -= w) < 0) return op;
    return ops[0]![1];
  };

  const batch = options.batch ?? 8;
  let lastSweep = sim.clock.now();
  let rounds = 0;
  while (sim.log.messages.length < options.events) {
    rounds++;
    if (rounds % 40 === 0) {
      // Host changes alone: nothing else in flight.
      const host = pick(hosts);
      const roll = random();
      await sim.call("host.set", { host, healthy: roll < 0.85, draining: roll >= 0.7 && roll < 0.85 });
    }
    await Promise.all(Array.from({ length: batch }, () => chooseOp()()));
    sim.clock.advance(int(400));
    // Leases held longer than the longest TTL are forgotten by their clients.
    if (leases.length > 200) leases.splice(0, leases.length - 200);
    if (sim.clock.now() - lastSweep >= 30_000) {
      await sim.sweep();
      lastSweep = sim.clock.now();
    }
    await options.onRound?.(sim, rounds);
  }
  await sim.stop();
  return sim;
}
