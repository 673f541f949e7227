/**
 * Lock throughput benchmark: acquire+release pairs per second through one
 * in-process leasehold service, against the ceiling of a trivial responder
 * that does the same JetStream work per request (one publish with a message
 * id and an expected last subject sequence) and nothing else.
 *
 *   npx tsx bench/locks.ts [--duration-ms 4000] [--warmup-ms 1000]
 *                          [--concurrency 1,64] [--repeats 3]
 *                          [--systems ceiling,leasehold] [--ttl-ms 10000]
 *                          [--names cold,hot] [--nodes 1|3]
 *                          [--layout plain|accounts]
 *                          [--async-traces] [--session-open] [--json]
 *
 * Names: `cold` spreads the pairs over 10,000 distinct lock names (each
 * worker walks its own share of them, so no two workers ever meet on a
 * name); `hot` keeps 64 names (at 64 in flight each worker has its own).
 * Each window uses names no earlier window used. `--nodes 3` runs on a
 * local three-node JetStream cluster with every stream at three replicas,
 * the ceiling's included. `--session-open` opens one session on the service
 * (kept alive throughout) before measuring: the pairs themselves take no
 * session, but once any session exists every lock decision reads the
 * session table, so this is the lock path of a service where sessions are
 * in use elsewhere. `--layout accounts` runs on the configuration
 * `leasehold nats-config --layout accounts` writes: the service (with
 * `principals: nats-request-info`) as its two users in its own account, the
 * ceiling as the same two users in that account, and the load as a client
 * account whose requests to both cross the same `share: true` import (so the
 * server adds `Nats-Request-Info` to each); one server only.
 *
 * See bench/README.md for what the figures mean and the last recorded run.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { NatsConnection } from "@nats-io/nats-core";
import { resolveConfig } from "../src/config.ts";
import { startAccountLayoutNats, type AccountLayoutNats } from "./account-layout.ts";
import {
  REQUEST_TIMEOUT_MS,
  alternate,
  ceilingSeq,
  ceilingStreamOf,
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
  windowLine,
  withBench,
  type CeilingOptions,
  type MachineInfo,
  type CommonSettings,
  type WindowFigures,
  type WorkFn,
  figure,
  NO_FIGURE,
} from "./support.ts";

type System = "ceiling" | "leasehold";
/** Which lock names a window's pairs use (see {@link nameChooser}). */
export type Names = "cold" | "hot";

/** Distinct names per window: cold spreads over this many, hot over {@link HOT_NAMES}. */
const COLD_NAMES = 10_000;
const HOT_NAMES = 64;

interface Settings extends CommonSettings {
  readonly systems: readonly System[];
  readonly ttlMs: number;
  /**
   * Connect with nats.js's default async traces (an Error captured per request)
   * instead of `noAsyncTraces`, which `leasehold serve` uses.
   */
  readonly asyncTraces: boolean;
  /** Whether a session is open on the service (kept alive) while measuring. */
  readonly sessionOpen: boolean;
  /** The service's --max-active-requests; undefined: its default. */
  readonly maxActiveRequests: number | undefined;
  readonly names: readonly Names[];
  readonly nodes: number;
  /** `plain`: one server without authorization; `accounts`: the account layout (see the file's comment). */
  readonly layout: Layout;
  readonly json: boolean;
}

type Layout = "plain" | "accounts";

/** One timed window of one system at one concurrency. */
interface Run extends WindowFigures {
  readonly system: System;
  readonly names: Names;
  readonly concurrency: number;
  readonly repeat: number;
  readonly seconds: number;
  readonly pairs: number;
  readonly failedRequests: number;
  readonly pairsPerSec: number;
  readonly requestsPerSec: number;
  /** Pairs per CPU-second of this process: throughput that stealing the CPU does not move. */
  readonly pairsPerNodeCpuSec: number;
}

function parseSettings(): Settings {
  const { values, common } = parseBenchArgs(
    "usage: npx tsx bench/locks.ts [--duration-ms N] [--warmup-ms N] [--concurrency 1,64] [--repeats N] [--systems ceiling,leasehold] [--ttl-ms N] [--names cold,hot] [--nodes 1|3] [--layout plain|accounts] [--async-traces] [--session-open] [--max-active-requests N] [--json]",
    {
      systems: { type: "string", default: "ceiling,leasehold" },
      "ttl-ms": { type: "string", default: "10000" },
      names: { type: "string", default: "cold,hot" },
      nodes: { type: "string", default: "1" },
      layout: { type: "string", default: "plain" },
      "async-traces": { type: "boolean", default: false },
      "session-open": { type: "boolean", default: false },
      "max-active-requests": { type: "string" },
    },
  );
  const [layout, ...more] = listOf<Layout>("layout", "layout", values.layout, ["plain", "accounts"]);
  if (layout === undefined || more.length > 0) throw new Error("--layout takes one of plain, accounts");
  const nodes = positiveInt("nodes", values.nodes);
  if (layout === "accounts" && nodes !== 1) throw new Error("--layout accounts runs on one server (--nodes 1)");
  return {
    ...common,
    layout,
    names: listOf<Names>("names", "name set", values.names, ["cold", "hot"]),
    nodes,
    systems: listOf<System>("systems", "system", values.systems, ["ceiling", "leasehold"]),
    ttlMs: positiveInt("ttl-ms", values["ttl-ms"]),
    asyncTraces: values["async-traces"],
    sessionOpen: values["session-open"],
    maxActiveRequests:
      values["max-active-requests"] === undefined ? undefined : positiveInt("max-active-requests", values["max-active-requests"]),
    json: values.json,
  };
}

/**
 * The lock name of each worker's next pair in one window (`tag` keeps
 * windows apart). Cold: worker w walks the indices w, w+c, w+2c, ... below
 * 10,000 and starts over, so the window's workers share 10,000 names and
 * never the same one at once. Hot: 64 names, worker w on w mod 64 (at 1 in
 * flight the one worker walks all 64). After a failure a worker's names get a
 * new generation suffix, so one bad turn cannot wedge it.
 */
export function nameChooser(tag: string, names: Names, concurrency: number): (worker: number) => { name: string; failed(): void } {
  const step: number[] = [];
  const generation: number[] = [];
  return (worker) => {
    const k = step[worker] ?? 0;
    step[worker] = k + 1;
    let index: number;
    if (names === "cold") {
      const share = Math.ceil((COLD_NAMES - worker) / concurrency);
      index = worker + concurrency * (k % Math.max(1, share));
    } else {
      index = concurrency >= HOT_NAMES ? worker % HOT_NAMES : (worker + concurrency * k) % HOT_NAMES;
    }
    return {
      name: `${tag}-${names}-${index}-g${generation[worker] ?? 0}`,
      failed: () => (generation[worker] = (generation[worker] ?? 0) + 1),
    };
  };
}

/** Acquire then release on the worker's next name. */
export function leaseholdPair(
  nc: NatsConnection,
  prefix: string,
  names: (worker: number) => { name: string; failed(): void },
  ttlMs: number,
): WorkFn {
  const acquire = `${prefix}.v1.lock.acquire`;
  const release = `${prefix}.v1.lock.release`;
  return async (worker, sample) => {
    const chosen = names(worker);
    const name = chosen.name;
    const failed = await requestPair(
      nc,
      sample,
      { subject: acquire, body: json({ name, owner: `bench-w${worker}`, ttlMs }) },
      (body: { lease?: { etag?: unknown } }) => (typeof body.lease?.etag === "string" ? body.lease.etag : undefined),
      (etag) => ({ subject: release, body: json({ name, etag }) }),
    );
    if (failed > 0) chosen.failed();
    return failed;
  };
}

/** The ceiling responder of the lock workload: acquire and release, one publish of a LockAcquired-sized event per request, keyed by name. */
export function lockCeilingOptions(dedupWindowMs: number, replicas: number): CeilingOptions {
  return {
    dedupWindowMs,
    replicas,
    ops: ["acquire", "release"],
    keyField: "name",
    // The same shape and size as a LockAcquired envelope.
    event: {
      type: "LockAcquired",
      v: 1,
      at: new Date().toISOString(),
      kind: "lock",
      id: "c64-w63-g0",
      data: { owner: "bench-w63", generation: 1, ttlMs: 10_000, expiresAt: new Date().toISOString(), previousOwner: "" },
    },
  };
}

/** The same two requests against the ceiling responder (same bodies, same names, so the same distinct subjects; same checks). */
export function ceilingPair(
  nc: NatsConnection,
  prefix: string,
  names: (worker: number) => { name: string; failed(): void },
  ttlMs: number,
): WorkFn {
  const acquire = `${prefix}.ceiling.v1.acquire`;
  const release = `${prefix}.ceiling.v1.release`;
  return (worker, sample) => {
    const name = names(worker).name;
    return requestPair(nc, sample, { subject: acquire, body: json({ name, owner: `bench-w${worker}`, ttlMs }) }, ceilingSeq, (etag) => ({
      subject: release,
      body: json({ name, etag }),
    }));
  };
}

/** The figures of one concurrency: medians over the repeats. */
interface Summary {
  readonly names: Names;
  readonly concurrency: number;
  readonly leasehold: SystemSummary | undefined;
  readonly ceiling: SystemSummary | undefined;
  /** Median over repeats of leasehold pairs/s divided by the ceiling's pairs/s of the same repeat. */
  readonly ratio: number | undefined;
  /** The same with pairs per CPU-second of this process, which is less moved by other load on the machine. */
  readonly cpuRatio: number | undefined;
  /** Median over repeats of leasehold's p50 latency divided by the ceiling's of the same repeat. */
  readonly p50Ratio: number | undefined;
}

interface SystemSummary {
  readonly pairsPerSec: number;
  readonly requestsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly failedRequests: number;
}

function summarize(runs: readonly Run[], names: Names, concurrency: number, repeats: number): Summary {
  const mine = runs.filter((r) => r.concurrency === concurrency && r.names === names);
  const of = (system: System): SystemSummary | undefined => {
    const its = mine.filter((r) => r.system === system);
    if (its.length === 0) return undefined;
    return {
      pairsPerSec: median(its.map((r) => r.pairsPerSec)),
      requestsPerSec: median(its.map((r) => r.requestsPerSec)),
      p50Ms: median(its.map((r) => r.p50Ms)),
      p99Ms: median(its.map((r) => r.p99Ms)),
      failedRequests: its.reduce((n, r) => n + r.failedRequests, 0),
    };
  };
  return {
    names,
    concurrency,
    leasehold: of("leasehold"),
    ceiling: of("ceiling"),
    ratio: medianRatio(mine, repeats, (r) => r.pairsPerSec),
    cpuRatio: medianRatio(mine, repeats, (r) => r.pairsPerNodeCpuSec),
    p50Ratio: medianRatio(mine, repeats, (r) => r.p50Ms),
  };
}

function report(settings: Settings, machine: MachineInfo, runs: readonly Run[], summaries: readonly Summary[]): string {
  const summaryTable = markdownTable(
    [
      "names",
      "in flight",
      "leasehold pairs/s",
      "leasehold req/s",
      "leasehold p50 ms",
      "leasehold p99 ms",
      "ceiling pairs/s",
      "ceiling req/s",
      "ceiling p50 ms",
      "ceiling p99 ms",
      "ratio leasehold/ceiling",
      "ratio per node CPU-s",
      "p50 ratio leasehold/ceiling",
      "failed requests (leasehold / ceiling)",
    ],
    summaries.map((s) => [
      s.names,
      s.concurrency,
      figure(s.leasehold?.pairsPerSec),
      figure(s.leasehold?.requestsPerSec),
      figure(s.leasehold?.p50Ms, 2),
      figure(s.leasehold?.p99Ms, 2),
      figure(s.ceiling?.pairsPerSec),
      figure(s.ceiling?.requestsPerSec),
      figure(s.ceiling?.p50Ms, 2),
      figure(s.ceiling?.p99Ms, 2),
      figure(s.ratio, 2),
      figure(s.cpuRatio, 2),
      figure(s.p50Ratio, 2),
      `${s.leasehold?.failedRequests ?? NO_FIGURE} / ${s.ceiling?.failedRequests ?? NO_FIGURE}`,
    ]),
  );
  const runTable = markdownTable(
    [
      "repeat",
      "names",
      "in flight",
      "system",
      "pairs/s",
      "p50 ms",
      "p99 ms",
      "node CPU %",
      "pairs per node CPU-s",
      "nats-server CPU %",
      "load 1m",
      "failed",
    ],
    runs.map((r) => [
      r.repeat,
      r.names,
      r.concurrency,
      r.system,
      figure(r.pairsPerSec),
      figure(r.p50Ms, 2),
      figure(r.p99Ms, 2),
      figure(r.nodeCpuPct),
      figure(r.pairsPerNodeCpuSec),
      figure(r.natsCpuPct),
      r.loadAvg1m,
      r.failedRequests,
    ]),
  );
  return reportText(
    machine,
    `${settings.layout === "accounts" ? "account layout (nats-config --layout accounts; service with principals nats-request-info; load as a client account through the share import), " : ""}${settings.nodes === 1 ? "one nats-server" : `${settings.nodes}-node cluster, streams at ${settings.nodes} replicas`}, ${settings.durationMs} ms per measurement after ${settings.warmupMs} ms warm-up, ${settings.repeats} interleaved repeats (medians; ratios = median of the per-repeat ratios), nats.js async traces ${settings.asyncTraces ? "on" : "off"}`,
    summaryTable,
    runTable,
  );
}

/** Opens one session on the service and keeps it alive every third of its TTL until closed. */
async function openSession(nc: NatsConnection, prefix: string): Promise<{ close(): void }> {
  const ttlMs = 30_000;
  const reply = await nc.request(`${prefix}.v1.session.open`, json({ owner: "bench-session", ttlMs }), { timeout: REQUEST_TIMEOUT_MS });
  const id = (reply.json<{ session?: { id?: unknown } }>().session?.id ?? "") as string;
  if (typeof id !== "string" || id === "") throw new Error(`session.open answered ${reply.string()}`);
  const keep = setInterval(() => {
    nc.request(`${prefix}.v1.session.keepalive`, json({ id }), { timeout: REQUEST_TIMEOUT_MS }).catch(() => undefined);
  }, ttlMs / 3);
  return { close: () => clearInterval(keep) };
}

async function main(): Promise<void> {
  const settings = parseSettings();
  // Every connection is set up as src/cli/serve.ts sets up the service's, so the ceiling pays what the service pays.
  let layout: AccountLayoutNats | undefined;
  const server =
    settings.layout === "accounts"
      ? async (prefix: string) => {
          layout = await startAccountLayoutNats(prefix, ceilingStreamOf(prefix));
          return layout.nats;
        }
      : undefined;
  await withBench(
    { noAsyncTraces: !settings.asyncTraces, nodes: settings.nodes, ...(server === undefined ? {} : { server }) },
    async (bench) => {
      const { prefix } = bench;
      const replicas = Math.min(settings.nodes, 3);
      const config = resolveConfig({
        prefix,
        nats: bench.nats.url,
        lockTtlMs: settings.ttlMs,
        maxTtlMs: Math.max(settings.ttlMs, 30_000),
        replicas,
        maxActiveRequests: settings.maxActiveRequests,
        ...(layout === undefined ? {} : { principals: "nats-request-info" as const }),
      });
      if (settings.systems.includes("leasehold")) await bench.startService(config, layout?.service);
      if (settings.systems.includes("ceiling")) {
        await bench.startCeiling(lockCeilingOptions(config.dedupWindowMs, replicas), layout?.service);
      }
      const load = await bench.connect("bench-load", layout?.client);
      const session = settings.sessionOpen && settings.systems.includes("leasehold") ? await openSession(load, prefix) : undefined;

      const runs: Run[] = [];
      for (let repeat = 1; repeat <= settings.repeats; repeat++) {
        for (const names of settings.names) {
          for (const concurrency of settings.concurrency) {
            for (const system of alternate(settings.systems, repeat)) {
              const chooser = nameChooser(`r${repeat}c${concurrency}`, names, concurrency);
              const pair =
                system === "leasehold"
                  ? leaseholdPair(load, prefix, chooser, settings.ttlMs)
                  : ceilingPair(load, prefix, chooser, settings.ttlMs);
              const w = await closedLoop(pair, concurrency, settings, bench.nats);
              const run: Run = {
                system,
                names,
                concurrency,
                repeat,
                seconds: w.seconds,
                pairs: w.completed,
                failedRequests: w.failedRequests,
                pairsPerSec: w.completed / w.seconds,
                requestsPerSec: w.samples / w.seconds,
                p50Ms: w.p50Ms,
                p99Ms: w.p99Ms,
                nodeCpuPct: w.nodeCpuPct,
                pairsPerNodeCpuSec: w.completed / w.nodeCpuSeconds,
                natsCpuPct: w.natsCpuPct,
                loadAvg1m: w.loadAvg1m,
              };
              runs.push(run);
              bench.progress(
                `repeat ${repeat} ${names} in-flight ${concurrency} ${system}: ${round(run.pairsPerSec)} pairs/s, ${windowLine(run)}, failed ${run.failedRequests}`,
              );
            }
          }
        }
      }
      session?.close();
      const summaries = settings.names.flatMap((names) => settings.concurrency.map((c) => summarize(runs, names, c, settings.repeats)));
      if (settings.json) {
        printJson({ argv: process.argv.slice(2), settings, machine: bench.machine, summaries, runs });
      } else {
        process.stdout.write(report(settings, bench.machine, runs, summaries));
      }
    },
  );
}

// bench/peers.ts imports this file's workload; the bench itself runs only when this file is the one started.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) runBench(main);
