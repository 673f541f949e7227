/**
 * Lock throughput benchmark: acquire+release pairs per second through one
 * in-process leasehold service, against the ceiling of a trivial responder
 * that does the same JetStream work per request (one publish with a message
 * id and an expected last subject sequence) and nothing else.
 *
 *   npx tsx bench/locks.ts [--duration-ms 5000] [--warmup-ms 1000]
 *                          [--concurrency 1,64] [--repeats 3]
 *                          [--systems ceiling,leasehold] [--ttl-ms 10000]
 *                          [--async-traces] [--json]
 *
 * See bench/README.md for what the figures mean and the last recorded run.
 */
import { parseArgs } from "node:util";
import { randomUUID } from "node:crypto";
import { loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "@nats-io/transport-node";
import { headers as natsHeaders, nanos, nuid, type Msg, type NatsConnection } from "@nats-io/nats-core";
import { DiscardPolicy, RetentionPolicy, StorageType, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { pino } from "pino";
import { resolveConfig } from "../src/config.ts";
import { startService, type RunningService } from "../src/service.ts";
import { machineInfo, markdownTable, median, quantile, round, startBenchNats, type BenchNats, type MachineInfo } from "./support.ts";

type System = "ceiling" | "leasehold";

interface Settings {
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly concurrency: readonly number[];
  readonly repeats: number;
  readonly systems: readonly System[];
  readonly ttlMs: number;
  /**
   * Connect with nats.js's default async traces (an Error captured per request)
   * instead of `noAsyncTraces`, which `leasehold serve` uses.
   */
  readonly asyncTraces: boolean;
  readonly json: boolean;
}

/** One timed window of one system at one concurrency. */
interface Run {
  readonly system: System;
  readonly concurrency: number;
  readonly repeat: number;
  readonly seconds: number;
  readonly pairs: number;
  readonly failedRequests: number;
  readonly pairsPerSec: number;
  readonly requestsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** CPU of this process (load generator plus service or responder), percent of one core. */
  readonly nodeCpuPct: number;
  /** Pairs per CPU-second of this process: throughput that stealing the CPU does not move. */
  readonly pairsPerNodeCpuSec: number;
  /** CPU of nats-server, percent of one core (NaN off Linux). */
  readonly natsCpuPct: number;
  readonly loadAvg1m: number;
}

/** Runs one acquire+release pair (or the ceiling's two requests) for a worker; resolves with how many requests failed. */
type PairFn = (worker: number, sample: (latencyMs: number) => void) => Promise<number>;

/** A bad command line: reported without a stack. */
class UsageError extends Error {
  override readonly name = "UsageError";
}

const REQUEST_TIMEOUT_MS = 10_000;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const json = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));

function parseSettings(): Settings {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        "duration-ms": { type: "string", default: "5000" },
        "warmup-ms": { type: "string", default: "1000" },
        concurrency: { type: "string", default: "1,64" },
        repeats: { type: "string", default: "3" },
        systems: { type: "string", default: "ceiling,leasehold" },
        "ttl-ms": { type: "string", default: "10000" },
        "async-traces": { type: "boolean", default: false },
        json: { type: "boolean", default: false },
        help: { type: "boolean", default: false },
      },
      strict: true,
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(
      "usage: npx tsx bench/locks.ts [--duration-ms N] [--warmup-ms N] [--concurrency 1,64] [--repeats N] [--systems ceiling,leasehold] [--ttl-ms N] [--async-traces] [--json]\n",
    );
    process.exit(0);
  }
  const positive = (name: string, raw: string): number => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${name} must be a positive whole number, got ${raw}`);
    return n;
  };
  const systems = values.systems.split(",").map((s) => s.trim());
  for (const s of systems) if (s !== "ceiling" && s !== "leasehold") throw new UsageError(`--systems: unknown system ${s}`);
  return {
    durationMs: positive("duration-ms", values["duration-ms"]),
    warmupMs: values["warmup-ms"] === "0" ? 0 : positive("warmup-ms", values["warmup-ms"]),
    concurrency: values.concurrency.split(",").map((c) => positive("concurrency", c.trim())),
    repeats: positive("repeats", values.repeats),
    systems: systems as System[],
    ttlMs: positive("ttl-ms", values["ttl-ms"]),
    asyncTraces: values["async-traces"],
    json: values.json,
  };
}

/** Did a service reply succeed (no `Nats-Service-Error-Code` header)? */
function succeeded(msg: Msg): boolean {
  return !msg.headers?.get("Nats-Service-Error-Code");
}

/** Acquire then release, each worker on its own lock (a fresh one after a failure, so one bad turn cannot wedge a worker). */
function leaseholdPair(nc: NatsConnection, prefix: string, concurrency: number, ttlMs: number): PairFn {
  const acquire = `${prefix}.v1.lock.acquire`;
  const release = `${prefix}.v1.lock.release`;
  const generation: number[] = [];
  return async (worker, sample) => {
    const name = `c${concurrency}-w${worker}-g${generation[worker] ?? 0}`;
    const renameOnFailure = (failed: number) => {
      if (failed > 0) generation[worker] = (generation[worker] ?? 0) + 1;
      return failed;
    };
    let t0 = performance.now();
    let etag: string;
    try {
      const reply = await nc.request(acquire, json({ name, owner: `bench-w${worker}`, ttlMs }), { timeout: REQUEST_TIMEOUT_MS });
      sample(performance.now() - t0);
      const body = JSON.parse(decoder.decode(reply.data)) as { lease?: { etag?: unknown } };
      if (!succeeded(reply) || typeof body.lease?.etag !== "string") return renameOnFailure(1);
      etag = body.lease.etag;
    } catch {
      return renameOnFailure(1);
    }
    t0 = performance.now();
    try {
      const reply = await nc.request(release, json({ name, etag }), { timeout: REQUEST_TIMEOUT_MS });
      sample(performance.now() - t0);
      return renameOnFailure(succeeded(reply) ? 0 : 1);
    } catch {
      return renameOnFailure(1);
    }
  };
}

/** The same two requests against the ceiling responder (same bodies, same checks). */
function ceilingPair(nc: NatsConnection, prefix: string, concurrency: number, ttlMs: number): PairFn {
  const acquire = `${prefix}.ceiling.v1.acquire`;
  const release = `${prefix}.ceiling.v1.release`;
  return async (worker, sample) => {
    const name = `c${concurrency}-w${worker}`;
    let t0 = performance.now();
    let etag: string;
    try {
      const reply = await nc.request(acquire, json({ name, owner: `bench-w${worker}`, ttlMs }), { timeout: REQUEST_TIMEOUT_MS });
      sample(performance.now() - t0);
      const body = JSON.parse(decoder.decode(reply.data)) as { seq?: unknown };
      if (!succeeded(reply) || typeof body.seq !== "number") return 1;
      etag = String(body.seq);
    } catch {
      return 1;
    }
    t0 = performance.now();
    try {
      const reply = await nc.request(release, json({ name, etag }), { timeout: REQUEST_TIMEOUT_MS });
      sample(performance.now() - t0);
      return succeeded(reply) ? 0 : 1;
    } catch {
      return 1;
    }
  };
}

/**
 * The ceiling: a callback-mode queue subscriber that, per request, reads the
 * name, does exactly one JetStream publish (message id, expected last subject
 * sequence on the worker's own subject, an event-sized payload) to a stream
 * created like the event stream, and replies. Nothing a lock turn does is
 * cheaper than this, so leasehold's pairs/s over this is its efficiency.
 */
async function startCeiling(nc: NatsConnection, prefix: string, dedupWindowMs: number): Promise<{ stop(): Promise<void> }> {
  const stream = `${prefix.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_CEILING`;
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({
    name: stream,
    subjects: [`${prefix}.ceiling.events.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    duplicate_window: nanos(dedupWindowMs),
    deny_delete: true,
    deny_purge: true,
    allow_direct: true,
    num_replicas: 1,
  });
  const js = jetstream(nc);
  // The same shape and size as a LockAcquired envelope.
  const payload = json({
    type: "LockAcquired",
    v: 1,
    at: new Date().toISOString(),
    kind: "lock",
    id: "c64-w63-g0",
    data: { owner: "bench-w63", generation: 1, ttlMs: 10_000, expiresAt: new Date().toISOString(), previousOwner: "" },
  });
  const lastSeq = new Map<string, number>();
  const serve = (msg: Msg) => {
    const { name } = JSON.parse(decoder.decode(msg.data)) as { name: string };
    const subject = `${prefix}.ceiling.events.${name}`;
    js.publish(subject, payload, { msgID: nuid.next(), expect: { lastSubjectSequence: lastSeq.get(subject) ?? 0 }, timeout: 5000 }).then(
      (ack) => {
        lastSeq.set(subject, ack.seq);
        msg.respond(json({ seq: ack.seq }));
      },
      (e: Error) => {
        const h = natsHeaders();
        h.set("Nats-Service-Error-Code", "503");
        h.set("Nats-Service-Error", e.message.replace(/[\r\n]+/g, " "));
        msg.respond(json({ error: { code: "UNAVAILABLE", message: e.message } }), { headers: h });
      },
    );
  };
  const subs = ["acquire", "release"].map((op) =>
    nc.subscribe(`${prefix}.ceiling.v1.${op}`, { queue: "ceiling", callback: (_err, msg) => serve(msg) }),
  );
  return {
    async stop() {
      await Promise.all(subs.map((s) => s.drain()));
    },
  };
}

/** Drives `concurrency` closed-loop workers: warm up, then count pairs and sample latencies for `durationMs`. */
async function measure(
  pair: PairFn,
  system: System,
  concurrency: number,
  repeat: number,
  settings: Settings,
  nats: BenchNats,
): Promise<Run> {
  const state = { phase: "warmup" as "warmup" | "measure" | "stop" };
  const latencies: number[] = [];
  let pairs = 0;
  let failedRequests = 0;
  const sample = (ms: number) => {
    if (state.phase === "measure") latencies.push(ms);
  };
  const workers = Array.from({ length: concurrency }, async (_, worker) => {
    while (state.phase !== "stop") {
      const failed = await pair(worker, sample);
      if ((state.phase as string) === "measure") {
        if (failed === 0) pairs++;
        failedRequests += failed;
      }
    }
  });
  await sleep(settings.warmupMs);
  state.phase = "measure";
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const nats0 = nats.cpuSeconds();
  await sleep(settings.durationMs);
  state.phase = "stop";
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const nats1 = nats.cpuSeconds();
  await Promise.all(workers);
  return {
    system,
    concurrency,
    repeat,
    seconds,
    pairs,
    failedRequests,
    pairsPerSec: pairs / seconds,
    requestsPerSec: latencies.length / seconds,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    nodeCpuPct: ((cpu.user + cpu.system) / 1e6 / seconds) * 100,
    pairsPerNodeCpuSec: pairs / ((cpu.user + cpu.system) / 1e6),
    natsCpuPct: nats0 === undefined || nats1 === undefined ? Number.NaN : ((nats1 - nats0) / seconds) * 100,
    loadAvg1m: round(loadavg()[0] ?? Number.NaN, 2),
  };
}

/** The figures of one concurrency: medians over the repeats. */
interface Summary {
  readonly concurrency: number;
  readonly leasehold: SystemSummary | undefined;
  readonly ceiling: SystemSummary | undefined;
  /** Median over repeats of leasehold pairs/s divided by the ceiling's pairs/s of the same repeat. */
  readonly ratio: number | undefined;
  /** The same with pairs per CPU-second of this process, which is less moved by other load on the machine. */
  readonly cpuRatio: number | undefined;
}

interface SystemSummary {
  readonly pairsPerSec: number;
  readonly requestsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly failedRequests: number;
}

function summarize(runs: readonly Run[], concurrency: number, repeats: number): Summary {
  const of = (system: System): SystemSummary | undefined => {
    const mine = runs.filter((r) => r.system === system && r.concurrency === concurrency);
    if (mine.length === 0) return undefined;
    return {
      pairsPerSec: median(mine.map((r) => r.pairsPerSec)),
      requestsPerSec: median(mine.map((r) => r.requestsPerSec)),
      p50Ms: median(mine.map((r) => r.p50Ms)),
      p99Ms: median(mine.map((r) => r.p99Ms)),
      failedRequests: mine.reduce((n, r) => n + r.failedRequests, 0),
    };
  };
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  for (let repeat = 1; repeat <= repeats; repeat++) {
    const find = (system: System) => runs.find((r) => r.system === system && r.concurrency === concurrency && r.repeat === repeat);
    const l = find("leasehold");
    const c = find("ceiling");
    if (l !== undefined && c !== undefined && c.pairsPerSec > 0) {
      ratios.push(l.pairsPerSec / c.pairsPerSec);
      cpuRatios.push(l.pairsPerNodeCpuSec / c.pairsPerNodeCpuSec);
    }
  }
  return {
    concurrency,
    leasehold: of("leasehold"),
    ceiling: of("ceiling"),
    ratio: ratios.length === 0 ? undefined : median(ratios),
    cpuRatio: cpuRatios.length === 0 ? undefined : median(cpuRatios),
  };
}

function report(settings: Settings, machine: MachineInfo, runs: readonly Run[], summaries: readonly Summary[]): string {
  const dash = "–";
  const n = (v: number | undefined, digits = 0) => (v === undefined || Number.isNaN(v) ? dash : v.toFixed(digits));
  const summaryTable = markdownTable(
    [
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
      "failed requests (leasehold / ceiling)",
    ],
    summaries.map((s) => [
      s.concurrency,
      n(s.leasehold?.pairsPerSec),
      n(s.leasehold?.requestsPerSec),
      n(s.leasehold?.p50Ms, 2),
      n(s.leasehold?.p99Ms, 2),
      n(s.ceiling?.pairsPerSec),
      n(s.ceiling?.requestsPerSec),
      n(s.ceiling?.p50Ms, 2),
      n(s.ceiling?.p99Ms, 2),
      n(s.ratio, 2),
      n(s.cpuRatio, 2),
      `${s.leasehold?.failedRequests ?? dash} / ${s.ceiling?.failedRequests ?? dash}`,
    ]),
  );
  const runTable = markdownTable(
    [
      "repeat",
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
      r.concurrency,
      r.system,
      n(r.pairsPerSec),
      n(r.p50Ms, 2),
      n(r.p99Ms, 2),
      n(r.nodeCpuPct),
      n(r.pairsPerNodeCpuSec),
      n(r.natsCpuPct),
      r.loadAvg1m,
      r.failedRequests,
    ]),
  );
  return [
    `node ${machine.node}, nats-server ${machine.natsServer}, ${machine.cpuModel} x ${machine.cores} cores (${machine.platform}), load average at start ${machine.loadAvgAtStart.join(" ")}`,
    `${settings.durationMs} ms per measurement after ${settings.warmupMs} ms warm-up, ${settings.repeats} interleaved repeats (medians; ratios = median of the per-repeat ratios), nats.js async traces ${settings.asyncTraces ? "on" : "off"}`,
    "",
    summaryTable,
    "",
    "Every measurement (CPU in percent of one core):",
    "",
    runTable,
    "",
  ].join("\n");
}

async function main(): Promise<void> {
  const settings = parseSettings();
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  const nats = await startBenchNats();
  const connections: NatsConnection[] = [];
  let service: RunningService | undefined;
  let ceiling: { stop(): Promise<void> } | undefined;
  const stopAll = async () => {
    await ceiling?.stop().catch(() => undefined);
    await service?.stop().catch(() => undefined);
    await Promise.all(connections.map((c) => c.drain().catch(() => undefined)));
    await nats.stop();
  };
  const onSignal = () => void stopAll().finally(() => process.exit(130));
  process.once("SIGINT", onSignal);
  try {
    const machine = machineInfo(nats.version);
    progress(`nats-server ${nats.version} at ${nats.url} (pid ${nats.pid})`);
    const connectAs = async (name: string) => {
      // Every connection is set up as src/cli/serve.ts sets up the service's, so the ceiling pays what the service pays.
      const nc = await connect({ servers: nats.url, name, noAsyncTraces: !settings.asyncTraces });
      connections.push(nc);
      return nc;
    };
    const prefix = `bench${randomUUID().replaceAll("-", "").slice(0, 8)}`;
    const config = resolveConfig({ prefix, nats: nats.url, lockTtlMs: settings.ttlMs, maxTtlMs: Math.max(settings.ttlMs, 30_000) });
    if (settings.systems.includes("leasehold")) {
      service = await startService({ nc: await connectAs("leasehold-service"), config, logger: pino({ level: "silent" }) });
    }
    if (settings.systems.includes("ceiling")) {
      ceiling = await startCeiling(await connectAs("bench-ceiling"), prefix, config.dedupWindowMs);
    }
    const load = await connectAs("bench-load");

    const runs: Run[] = [];
    for (let repeat = 1; repeat <= settings.repeats; repeat++) {
      for (const concurrency of settings.concurrency) {
        // Alternate which system goes first so slow drift in the machine's load does not favour one.
        const order = repeat % 2 === 1 ? settings.systems : [...settings.systems].reverse();
        for (const system of order) {
          const pair =
            system === "leasehold"
              ? leaseholdPair(load, prefix, concurrency, settings.ttlMs)
              : ceilingPair(load, prefix, concurrency, settings.ttlMs);
          const run = await measure(pair, system, concurrency, repeat, settings, nats);
          runs.push(run);
          progress(
            `repeat ${repeat} in-flight ${concurrency} ${system}: ${round(run.pairsPerSec)} pairs/s, p50 ${round(run.p50Ms, 2)} ms, p99 ${round(run.p99Ms, 2)} ms, node ${round(run.nodeCpuPct)}% nats ${round(run.natsCpuPct)}%, failed ${run.failedRequests}`,
          );
        }
      }
    }
    const summaries = settings.concurrency.map((c) => summarize(runs, c, settings.repeats));
    if (settings.json) {
      process.stdout.write(
        `${JSON.stringify({ date: new Date().toISOString(), argv: process.argv.slice(2), settings, machine, summaries, runs }, null, 2)}\n`,
      );
    } else {
      process.stdout.write(report(settings, machine, runs, summaries));
    }
  } finally {
    process.off("SIGINT", onSignal);
    await stopAll();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(e instanceof UsageError ? `${e.message} (see --help)\n` : `bench failed: ${(e as Error).stack ?? String(e)}\n`);
  process.exitCode = 1;
});
