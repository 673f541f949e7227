/**
 * In-process micro-benchmark of selection cost: `proxy.acquire` + release
 * with few and many proxies, `route.acquire` (reuse and new placement) with
 * few and many hosts, through the real endpoints, actors and read models on
 * the in-memory event log (no NATS), so what grows with the fleet shows
 * alone. A developer's tool for before/after figures (docs/performance.md);
 * not part of `npm run bench`.
 *
 *   npx tsx bench/selection-micro.ts [--ms 3000] [--concurrency 64] [--only proxies|routes|rank|place]
 */
import { pino } from "pino";
import { ActorRuntime } from "../src/actors/actor-runtime.ts";
import { systemClock } from "../src/actors/clock.ts";
import { type TurnResult } from "../src/actors/actor-runtime.ts";
import { proxyModule } from "../src/proxy/module.ts";
import { routeModule } from "../src/route/module.ts";
import { resolveConfig } from "../src/config.ts";
import { MemoryEventLog } from "../src/events/memory-event-log.ts";
import { Subjects } from "../src/contract/subjects.ts";
import type { KindContext, KindModule } from "../src/transport/kind-module.ts";
import { considerProxies, rankProxies } from "../src/proxy/select.ts";
import { ProxySelectionIndex } from "../src/proxy/selection-index.ts";
import { initialProxyState, type ProxyLease, type ProxyState } from "../src/proxy/state.ts";
import { leastLoadedChooser, type RouteChooser } from "../src/route/chooser.ts";
import type { AcquireRoute, RouteSettings } from "../src/route/commands.ts";
import { decideRoute } from "../src/route/decide.ts";
import { HostLoadOrder } from "../src/host/load-order.ts";
import { initialRouteState } from "../src/route/state.ts";

const args = process.argv.slice(2);
const arg = (name: string, fallback: string): string => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const durationMs = Number(arg("ms", "3000"));
const concurrency = Number(arg("concurrency", "64"));
const only = arg("only", "");

const encoder = new TextEncoder();
const quiet = pino({ level: "silent" });

function boot(make: (ctx: KindContext) => KindModule): { call: (op: string, body: unknown) => Promise<TurnResult>; module: KindModule } {
  const config = resolveConfig({ prefix: "micro" });
  const log = new MemoryEventLog();
  const subjects = new Subjects(config.prefix);
  let ids = 0;
  const runtime = new ActorRuntime({ log, subjects, clock: systemClock, logger: quiet, dedupWindowMs: config.dedupWindowMs });
  const module = make({ runtime, log, subjects, config, clock: systemClock, logger: quiet, newId: () => `id-${++ids}` });
  const byOp = new Map(module.endpoints.map((e) => [`${e.kind}.${e.op}`, e]));
  return {
    module,
    call(op, body) {
      return byOp.get(op)!.run(encoder.encode(JSON.stringify(body)));
    },
  };
}

async function measure(work: (worker: number, i: number) => Promise<void>): Promise<number> {
  let done = 0;
  const warm = Date.now() + 300;
  while (Date.now() < warm) await work(0, done++);
  done = 0;
  const start = performance.now();
  // The in-memory log answers in microtasks, so a timer would never fire: each worker checks the time.
  const end = start + durationMs;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      let i = 0;
      while (performance.now() < end) {
        await work(w, i++);
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

async function proxies(n: number): Promise<number> {
  const s = boot(proxyModule);
  await s.module.start?.();
  for (let i = 0; i < n; i++) await s.call("proxy.register", { proxy: `p${i}`, maxLeases: 1_000_000, latencyMs: i % 7 });
  return measure(async () => {
    const r = await s.call("proxy.acquire", { ttlMs: 600_000 });
    if (!r.ok) throw new Error(JSON.stringify(r.rejection));
    await s.call("proxy.release", { leaseId: (r.reply as { lease: { id: string } }).lease.id });
  });
}

async function routes(n: number, reuse: boolean): Promise<number> {
  const s = boot(routeModule);
  await s.module.start?.();
  const candidates = Array.from({ length: n }, (_, i) => `h${i}`);
  for (const host of candidates) await s.call("host.set", { host, healthy: true, draining: false });
  let fresh = 0;
  return measure(async (w) => {
    const body = reuse ? { route: `r${w}`, fp: "", model: "m", candidates } : { route: `r${w}`, fp: `c${++fresh}`, model: "m", candidates };
    const r = await s.call("route.acquire", body);
    if (!r.ok) throw new Error(JSON.stringify(r.rejection));
  });
}

/** The choosing alone, per acquisition: ranking every proxy (as before the index) against the index, same states. */
function rankingCost(n: number): { scanUs: number; indexUs: number } {
  const states = new Map<string, ProxyState>();
  const now = Date.now();
  for (let i = 0; i < n; i++) {
    const name = `p${i}`;
    const leases = new Map<string, ProxyLease>();
    for (let j = 0; j < 3; j++) {
      const id = `${name}-${j}`;
      leases.set(id, { id, target: "", ttlMs: 60_000, expiresAt: new Date(now + 60_000).toISOString(), expiresAtMs: now + 60_000 });
    }
    states.set(name, { ...initialProxyState(name), registration: { maxLeases: 100, latencyMs: i % 7, labels: {}, healthy: true }, leases });
  }
  const stateOf = (name: string) => states.get(name)!;
  const index = new ProxySelectionIndex({ stateOf, states: () => states.values() });
  const time = (fn: () => void): number => {
    const rounds = Math.max(200, Math.floor(2_000_000 / n));
    for (let i = 0; i < rounds / 10; i++) fn();
    const t0 = performance.now();
    for (let i = 0; i < rounds; i++) fn();
    return ((performance.now() - t0) * 1000) / rounds;
  };
  let k = 0;
  const scanUs = time(() => {
    const c = considerProxies(undefined, {}, stateOf, () => states.values());
    if ("considered" in c) rankProxies(c.considered, "", now, { granted: () => 0, asking: () => 0 });
  });
  // Each round also moves one proxy's load up and down, as an acquisition's ask does.
  const indexUs = time(() => {
    const name = `p${k++ % n}`;
    index.noteAsking(name, 1);
    index.rank({}, "", now, 16);
    index.noteAsking(name, -1);
  });
  return { scanUs, indexUs };
}

/**
 * A new placement's decision alone (seen check and choosing), per acquisition, among `n` healthy
 * candidates with loads 0-3: the general path (every candidate filtered, then chosen), the one-pass
 * scan, and the walk of the load order; the candidate list is the frozen one a repeated body gives.
 */
function placementCost(n: number): { generalUs: number; scanUs: number; indexUs: number } {
  const names = Array.from({ length: n }, (_, i) => `h${i}`);
  const candidates = Object.freeze([...names]);
  const hosts = new Map(names.map((h) => [h, { healthy: true, draining: false, maxLeases: null }]));
  const loads = new Map(names.map((h, i) => [h, 1 + ((i * 7) % 3)]));
  const order = new HostLoadOrder();
  for (const h of names) order.set(h, loads.get(h)!);
  let state = initialRouteState("r");
  state = { ...state, seen: new Set(names) };
  const command = (withOrder: boolean): AcquireRoute => ({
    op: "acquire",
    fp: "c",
    model: "m",
    candidates,
    hosts,
    loads,
    recordReuse: false,
    ...(withOrder ? { order } : {}),
  });
  const settings = (chooser: RouteChooser): RouteSettings => ({ routeIdleMs: 60_000, chooser });
  const time = (settingsOf: RouteSettings, cmd: AcquireRoute): number => {
    const rounds = Math.max(200, Math.floor(2_000_000 / n));
    const now = Date.now();
    for (let i = 0; i < rounds / 10; i++) decideRoute(state, cmd, now, settingsOf);
    const t0 = performance.now();
    for (let i = 0; i < rounds; i++) decideRoute(state, cmd, now, settingsOf);
    return ((performance.now() - t0) * 1000) / rounds;
  };
  return {
    // The same chooser under another identity takes the general path.
    generalUs: time(settings({ ...leastLoadedChooser }), command(false)),
    scanUs: time(settings(leastLoadedChooser), command(false)),
    indexUs: time(settings(leastLoadedChooser), command(true)),
  };
}

const round = (x: number) => Math.round(x);
if (only === "place") {
  for (const n of [8, 1000, 10_000]) {
    const { generalUs, scanUs, indexUs } = placementCost(n);
    console.log(
      `placing among ${n} hosts: general path ${generalUs.toFixed(2)} us, one pass ${scanUs.toFixed(2)} us, load order ${indexUs.toFixed(2)} us`,
    );
  }
  process.exit(0);
}
if (only === "rank") {
  for (const n of [10, 1000, 10_000]) {
    const { scanUs, indexUs } = rankingCost(n);
    console.log(`choosing among ${n} proxies: every proxy ranked ${scanUs.toFixed(2)} us, index ${indexUs.toFixed(2)} us`);
  }
  process.exit(0);
}
if (only !== "routes") {
  const small = await proxies(10);
  const large = await proxies(1000);
  console.log(`proxy.acquire+release/s  10 proxies ${round(small)}  1000 proxies ${round(large)}  ratio ${(large / small).toFixed(2)}`);
}
if (only !== "proxies") {
  for (const reuse of [true, false]) {
    const small = await routes(8, reuse);
    const large = await routes(1000, reuse);
    console.log(
      `route.acquire/s ${reuse ? "reuse" : "new  "}  8 hosts ${round(small)}  1000 hosts ${round(large)}  ratio ${(large / small).toFixed(2)}`,
    );
  }
}
process.exit(0);
