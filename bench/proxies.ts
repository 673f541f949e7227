/**
 * Proxy lease throughput benchmark: acquire+release pairs per second through
 * one in-process leasehold service over 100 registered proxies, against the
 * same-run ceiling of a trivial responder that does one JetStream publish per
 * request (message id, expected last subject sequence on one subject per
 * proxy, a ProxyLeaseGranted-sized payload) and nothing else.
 *
 *   npx tsx bench/proxies.ts [--duration-ms 5000] [--warmup-ms 1000]
 *                            [--concurrency 1,64] [--repeats 3] [--proxies 100]
 *                            [--systems ceiling,leasehold] [--instances 1] [--json]
 *
 * Each leasehold pair is `proxy.acquire {ttlMs}` (no candidates: the selector
 * ranks all proxies) then `proxy.release {leaseId}`. Capacity is ample, so
 * every acquisition should succeed; failures are counted and printed, and
 * so are appends that failed their expected-sequence check (conflicts, which
 * `--instances 2` makes possible: two instances picking the same proxy).
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { NatsConnection } from "@nats-io/nats-core";
import { resolveConfig } from "../src/config.ts";
import {
  REQUEST_TIMEOUT_MS,
  alternate,
  ceilingSeq,
  closedLoop,
  json,
  listOf,
  markdownTable,
  median,
  medianRatio,
  parseBenchArgs,
  positiveInt,
  printJson,
  reportText,
  requestPair,
  round,
  runBench,
  succeeded,
  windowLine,
  withBench,
  type MachineInfo,
  type CeilingOptions,
  type CommonSettings,
  type WindowFigures,
  type WorkFn,
} from "./support.ts";

type System = "ceiling" | "leasehold";

interface Settings extends CommonSettings {
  readonly proxies: number;
  readonly systems: readonly System[];
  readonly ttlMs: number;
  readonly json: boolean;
  /** Service instances sharing the load (their endpoints are one queue group); 2 or more show conflicts across instances. */
  readonly instances: number;
}

interface Run extends WindowFigures {
  readonly system: System;
  readonly concurrency: number;
  readonly repeat: number;
  readonly pairsPerSec: number;
  readonly failedRequests: number;
  /** Appends that failed their expected-sequence check, per request (leasehold only). */
  readonly conflictsPerRequest: number;
}

function parseSettings(): Settings {
  const { values, common } = parseBenchArgs(
    "usage: npx tsx bench/proxies.ts [--duration-ms N] [--warmup-ms N] [--concurrency 1,64] [--repeats N] [--proxies N] [--systems ceiling,leasehold] [--ttl-ms N] [--instances N] [--json]",
    {
      proxies: { type: "string", default: "100" },
      systems: { type: "string", default: "ceiling,leasehold" },
      "ttl-ms": { type: "string", default: "10000" },
      instances: { type: "string", default: "1" },
    },
  );
  return {
    ...common,
    proxies: positiveInt("proxies", values.proxies),
    systems: listOf<System>("systems", "system", values.systems, ["ceiling", "leasehold"]),
    ttlMs: positiveInt("ttl-ms", values["ttl-ms"]),
    json: values.json,
    instances: positiveInt("instances", values.instances),
  };
}

/** Acquire on any proxy (the selector chooses), then release that lease. */
export function leaseholdPair(nc: NatsConnection, prefix: string, ttlMs: number): WorkFn {
  const acquire = { subject: `${prefix}.v1.proxy.acquire`, body: json({ ttlMs }) };
  const release = `${prefix}.v1.proxy.release`;
  return (_worker, sample) =>
    requestPair(
      nc,
      sample,
      acquire,
      (body: { lease?: { id?: unknown } }) => (typeof body.lease?.id === "string" ? body.lease.id : undefined),
      (leaseId) => ({ subject: release, body: json({ leaseId }) }),
    );
}

/**
 * The same two requests against the ceiling responder, each worker on a
 * subject of its own: one publish per request to distinct subjects, as the
 * service's turns do. (Keying the subject by `worker % proxies` made 64
 * workers collide on 10 subjects, so most ceiling publishes failed their
 * expected-sequence check and the ratio meant nothing.)
 */
export function ceilingPair(nc: NatsConnection, prefix: string, ttlMs: number): WorkFn {
  const acquire = `${prefix}.ceiling.v1.acquire`;
  const release = `${prefix}.ceiling.v1.release`;
  return (worker, sample) => {
    const proxy = `proxy-w${worker}`;
    return requestPair(nc, sample, { subject: acquire, body: json({ proxy, ttlMs }) }, ceilingSeq, (leaseId) => ({
      subject: release,
      body: json({ proxy, leaseId }),
    }));
  };
}

/**
 * Registers `proxies` proxies on the service of `prefix` with ample capacity
 * for `concurrency` acquisitions in flight, so every acquisition can succeed
 * and the figures measure turns, not refusals.
 */
export async function registerProxies(nc: NatsConnection, prefix: string, proxies: number, concurrency: number): Promise<void> {
  const maxLeases = concurrency * 4;
  for (let i = 0; i < proxies; i++) {
    const reply = await nc.request(
      `${prefix}.v1.proxy.register`,
      json({ proxy: `proxy-${String(i).padStart(3, "0")}`, maxLeases, latencyMs: i % 7 }),
      { timeout: REQUEST_TIMEOUT_MS },
    );
    if (!succeeded(reply)) throw new Error(`register failed: ${reply.string()}`);
  }
}

/** The ceiling responder for proxy pairs: one publish per request of a ProxyLeaseGranted-sized envelope. */
export function proxyCeilingOptions(dedupWindowMs: number): CeilingOptions {
  return {
    dedupWindowMs,
    ops: ["acquire", "release"],
    keyField: "proxy",
    event: {
      type: "ProxyLeaseGranted",
      v: 1,
      at: new Date().toISOString(),
      kind: "proxy",
      id: "proxy-063",
      data: {
        leaseId: "qL3x9oV2c8T0mJ4rA1bZ5w",
        target: "",
        ttlMs: 10_000,
        expiresAt: new Date().toISOString(),
        stats: { considered: 100, unhealthy: 0, inCooldown: 0, atCapacity: 0 },
      },
    },
  };
}

/** Medians per concurrency (pairs/s, p50) and the median of the per-repeat ratios, for the JSON output. */
function summaryRows(settings: Settings, runs: readonly Run[]) {
  return settings.concurrency.map((concurrency) => {
    const mine = runs.filter((r) => r.concurrency === concurrency);
    const of = (system: System) => mine.filter((r) => r.system === system);
    return {
      concurrency,
      leasehold: median(of("leasehold").map((r) => r.pairsPerSec)),
      leaseholdP50: median(of("leasehold").map((r) => r.p50Ms)),
      ceiling: median(of("ceiling").map((r) => r.pairsPerSec)),
      ceilingP50: median(of("ceiling").map((r) => r.p50Ms)),
      ratio: medianRatio(mine, settings.repeats, (r) => r.pairsPerSec),
      p50Ratio: medianRatio(mine, settings.repeats, (r) => r.p50Ms),
      failed: mine.reduce((n, r) => n + r.failedRequests, 0),
    };
  });
}

function report(settings: Settings, machine: MachineInfo, runs: readonly Run[]): string {
  const dash = "–";
  const n = (v: number | undefined, digits = 0) => (v === undefined || Number.isNaN(v) ? dash : String(round(v, digits)));
  const of = (system: System, c: number) => runs.filter((r) => r.system === system && r.concurrency === c);
  const med = (rs: readonly Run[], f: (r: Run) => number) => (rs.length === 0 ? undefined : median(rs.map(f)));
  const ratio = (c: number) =>
    medianRatio(
      runs.filter((r) => r.concurrency === c),
      settings.repeats,
      (r) => r.pairsPerSec,
    );
  const summary = markdownTable(
    [
      "in flight",
      "leasehold pairs/s",
      "leasehold p50 ms",
      "leasehold p99 ms",
      "ceiling pairs/s",
      "ceiling p50 ms",
      "ceiling p99 ms",
      "ratio leasehold/ceiling",
      "failed requests (leasehold / ceiling)",
    ],
    settings.concurrency.map((c) => {
      const l = of("leasehold", c);
      const x = of("ceiling", c);
      return [
        c,
        n(med(l, (r) => r.pairsPerSec)),
        n(
          med(l, (r) => r.p50Ms),
          2,
        ),
        n(
          med(l, (r) => r.p99Ms),
          2,
        ),
        n(med(x, (r) => r.pairsPerSec)),
        n(
          med(x, (r) => r.p50Ms),
          2,
        ),
        n(
          med(x, (r) => r.p99Ms),
          2,
        ),
        n(ratio(c), 2),
        `${l.length === 0 ? dash : l.reduce((s, r) => s + r.failedRequests, 0)} / ${x.length === 0 ? dash : x.reduce((s, r) => s + r.failedRequests, 0)}`,
      ];
    }),
  );
  const all = markdownTable(
    [
      "repeat",
      "in flight",
      "system",
      "pairs/s",
      "p50 ms",
      "p99 ms",
      "conflicts/request",
      "node CPU %",
      "nats-server CPU %",
      "load 1m",
      "failed",
    ],
    runs.map((r) => [
      r.repeat,
      r.concurrency,
      r.system,
      n(r.pairsPerSec),
      n(r.p50Ms, 2),
      n(r.p99Ms, 2),
      r.system === "ceiling" ? dash : n(r.conflictsPerRequest, 4),
      n(r.nodeCpuPct),
      n(r.natsCpuPct),
      r.loadAvg1m,
      r.failedRequests,
    ]),
  );
  return reportText(
    machine,
    `${settings.proxies} proxies, ${settings.durationMs} ms per measurement after ${settings.warmupMs} ms warm-up, ${settings.repeats} interleaved repeats (medians; ratio = median of per-repeat ratios)`,
    summary,
    all,
  );
}

async function main(): Promise<void> {
  const settings = parseSettings();
  // Every connection as `leasehold serve` sets up its own (no async traces), as in bench/locks.ts.
  await withBench({ noAsyncTraces: true }, async (bench) => {
    const { prefix } = bench;
    const config = resolveConfig({ prefix, nats: bench.nats.url });
    const load = await bench.connect("bench-load");
    if (settings.systems.includes("leasehold")) {
      for (let i = 0; i < settings.instances; i++) await bench.startService(config);
      await registerProxies(load, prefix, settings.proxies, Math.max(...settings.concurrency));
    }
    if (settings.systems.includes("ceiling")) await bench.startCeiling(proxyCeilingOptions(config.dedupWindowMs));

    const runs: Run[] = [];
    for (let repeat = 1; repeat <= settings.repeats; repeat++) {
      for (const concurrency of settings.concurrency) {
        for (const system of alternate(settings.systems, repeat)) {
          const pair = system === "leasehold" ? leaseholdPair(load, prefix, settings.ttlMs) : ceilingPair(load, prefix, settings.ttlMs);
          let counts0 = bench.appendCounts();
          const w = await closedLoop(pair, concurrency, settings, bench.nats, () => {
            counts0 = bench.appendCounts();
            return Promise.resolve();
          });
          const conflicts = system === "leasehold" ? bench.appendCounts().conflicts - counts0.conflicts : 0;
          const run: Run = {
            system,
            concurrency,
            repeat,
            pairsPerSec: w.completed / w.seconds,
            p50Ms: w.p50Ms,
            p99Ms: w.p99Ms,
            failedRequests: w.failedRequests,
            // Both requests of every pair that finished, with the tail closedLoop waits for.
            conflictsPerRequest: conflicts / Math.max(1, 2 * w.completed + w.failedRequests),
            nodeCpuPct: w.nodeCpuPct,
            natsCpuPct: w.natsCpuPct,
            loadAvg1m: w.loadAvg1m,
          };
          runs.push(run);
          bench.progress(
            `repeat ${repeat} in-flight ${concurrency} ${system}: ${round(run.pairsPerSec)} pairs/s, ${windowLine(run)}, conflicts ${conflicts}, failed ${run.failedRequests}`,
          );
        }
      }
    }
    if (settings.json) {
      printJson({ argv: process.argv.slice(2), settings, machine: bench.machine, rows: summaryRows(settings, runs), runs });
    } else {
      process.stdout.write(report(settings, bench.machine, runs));
    }
  });
}

// bench/request-cost.ts imports this file's workload; the bench itself runs only when this file is the one started.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) runBench(main);
