/**
 * Proxy lease throughput benchmark: acquire+release pairs per second through
 * one in-process leasehold service over 100 registered proxies, against the
 * same-run ceiling of a trivial responder that does one JetStream publish per
 * request (message id, expected last subject sequence on one subject per
 * proxy, a ProxyLeaseGranted-sized payload) and nothing else.
 *
 *   npx tsx bench/proxies.ts [--duration-ms 5000] [--warmup-ms 1000]
 *                            [--concurrency 1,64] [--repeats 3] [--proxies 100]
 *                            [--systems ceiling,leasehold] [--json]
 *
 * Each leasehold pair is `proxy.acquire {ttlMs}` (no candidates: the selector
 * ranks all proxies) then `proxy.release {leaseId}`. Capacity is ample, so
 * every acquisition should succeed; failures are counted and printed.
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
import { machineInfo, markdownTable, median, quantile, round, startBenchNats, type BenchNats } from "./support.ts";

type System = "ceiling" | "leasehold";

interface Settings {
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly concurrency: readonly number[];
  readonly repeats: number;
  readonly proxies: number;
  readonly systems: readonly System[];
  readonly ttlMs: number;
  readonly json: boolean;
}

interface Run {
  readonly system: System;
  readonly concurrency: number;
  readonly repeat: number;
  readonly pairsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly failedRequests: number;
  readonly nodeCpuPct: number;
  readonly natsCpuPct: number;
  readonly loadAvg1m: number;
}

/** One acquire+release pair of one worker; resolves with how many of its requests failed. */
type PairFn = (worker: number, sample: (latencyMs: number) => void) => Promise<number>;

const REQUEST_TIMEOUT_MS = 10_000;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const json = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));
const succeeded = (msg: Msg) => !msg.headers?.get("Nats-Service-Error-Code");

function parseSettings(): Settings {
  const { values } = parseArgs({
    options: {
      "duration-ms": { type: "string", default: "5000" },
      "warmup-ms": { type: "string", default: "1000" },
      concurrency: { type: "string", default: "1,64" },
      repeats: { type: "string", default: "3" },
      proxies: { type: "string", default: "100" },
      systems: { type: "string", default: "ceiling,leasehold" },
      "ttl-ms": { type: "string", default: "10000" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(
      "usage: npx tsx bench/proxies.ts [--duration-ms N] [--warmup-ms N] [--concurrency 1,64] [--repeats N] [--proxies N] [--systems ceiling,leasehold] [--ttl-ms N] [--json]\n",
    );
    process.exit(0);
  }
  const positive = (name: string, raw: string): number => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive whole number, got ${raw}`);
    return n;
  };
  const systems = values.systems.split(",").map((s) => s.trim());
  for (const s of systems) if (s !== "ceiling" && s !== "leasehold") throw new Error(`--systems: unknown system ${s}`);
  return {
    durationMs: positive("duration-ms", values["duration-ms"]),
    warmupMs: values["warmup-ms"] === "0" ? 0 : positive("warmup-ms", values["warmup-ms"]),
    concurrency: values.concurrency.split(",").map((c) => positive("concurrency", c.trim())),
    repeats: positive("repeats", values.repeats),
    proxies: positive("proxies", values.proxies),
    systems: systems as System[],
    ttlMs: positive("ttl-ms", values["ttl-ms"]),
    json: values.json,
  };
}

/** Acquire on any proxy (the selector chooses), then release that lease. */
function leaseholdPair(nc: NatsConnection, prefix: string, ttlMs: number): PairFn {
  const acquire = `${prefix}.v1.proxy.acquire`;
  const release = `${prefix}.v1.proxy.release`;
  const body = json({ ttlMs });
  return async (_worker, sample) => {
    let t0 = performance.now();
    let leaseId: string;
    try {
      const reply = await nc.request(acquire, body, { timeout: REQUEST_TIMEOUT_MS });
      sample(performance.now() - t0);
      const parsed = JSON.parse(decoder.decode(reply.data)) as { lease?: { id?: unknown } };
      if (!succeeded(reply) || typeof parsed.lease?.id !== "string") return 1;
      leaseId = parsed.lease.id;
    } catch {
      return 1;
    }
    t0 = performance.now();
    try {
      const reply = await nc.request(release, json({ leaseId }), { timeout: REQUEST_TIMEOUT_MS });
      sample(performance.now() - t0);
      return succeeded(reply) ? 0 : 1;
    } catch {
      return 1;
    }
  };
}

/** The same two requests against the ceiling responder, each worker on proxy `worker % proxies`. */
function ceilingPair(nc: NatsConnection, prefix: string, proxies: number, ttlMs: number): PairFn {
  const acquire = `${prefix}.ceiling.v1.acquire`;
  const release = `${prefix}.ceiling.v1.release`;
  return async (worker, sample) => {
    const proxy = `proxy-${String(worker % proxies).padStart(3, "0")}`;
    let t0 = performance.now();
    let leaseId: string;
    try {
      const reply = await nc.request(acquire, json({ proxy, ttlMs }), { timeout: REQUEST_TIMEOUT_MS });
      sample(performance.now() - t0);
      const parsed = JSON.parse(decoder.decode(reply.data)) as { seq?: unknown };
      if (!succeeded(reply) || typeof parsed.seq !== "number") return 1;
      leaseId = String(parsed.seq);
    } catch {
      return 1;
    }
    t0 = performance.now();
    try {
      const reply = await nc.request(release, json({ proxy, leaseId }), { timeout: REQUEST_TIMEOUT_MS });
      sample(performance.now() - t0);
      return succeeded(reply) ? 0 : 1;
    } catch {
      return 1;
    }
  };
}

/**
 * The ceiling: per request, read the proxy name, do exactly one JetStream
 * publish (message id, expected last sequence of that proxy's subject, an
 * event-sized payload) to a stream created like the event stream, and reply.
 * Nothing a proxy turn does is cheaper, so leasehold's pairs/s over this is
 * its efficiency.
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
  const payload = json({
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
  });
  const lastSeq = new Map<string, number>();
  const serve = (msg: Msg) => {
    const { proxy } = JSON.parse(decoder.decode(msg.data)) as { proxy: string };
    const subject = `${prefix}.ceiling.events.${proxy}`;
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
    pairsPerSec: pairs / seconds,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    failedRequests,
    nodeCpuPct: ((cpu.user + cpu.system) / 1e6 / seconds) * 100,
    natsCpuPct: nats0 === undefined || nats1 === undefined ? Number.NaN : ((nats1 - nats0) / seconds) * 100,
    loadAvg1m: round(loadavg()[0] ?? Number.NaN, 2),
  };
}

function report(settings: Settings, runs: readonly Run[], header: string): string {
  const dash = "–";
  const n = (v: number | undefined, digits = 0) => (v === undefined || Number.isNaN(v) ? dash : String(round(v, digits)));
  const of = (system: System, c: number) => runs.filter((r) => r.system === system && r.concurrency === c);
  const med = (rs: readonly Run[], f: (r: Run) => number) => (rs.length === 0 ? undefined : median(rs.map(f)));
  const ratio = (c: number) => {
    const ratios: number[] = [];
    for (let repeat = 1; repeat <= settings.repeats; repeat++) {
      const l = runs.find((r) => r.system === "leasehold" && r.concurrency === c && r.repeat === repeat);
      const x = runs.find((r) => r.system === "ceiling" && r.concurrency === c && r.repeat === repeat);
      if (l !== undefined && x !== undefined && x.pairsPerSec > 0) ratios.push(l.pairsPerSec / x.pairsPerSec);
    }
    return ratios.length === 0 ? undefined : median(ratios);
  };
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
    ["repeat", "in flight", "system", "pairs/s", "p50 ms", "p99 ms", "node CPU %", "nats-server CPU %", "load 1m", "failed"],
    runs.map((r) => [
      r.repeat,
      r.concurrency,
      r.system,
      n(r.pairsPerSec),
      n(r.p50Ms, 2),
      n(r.p99Ms, 2),
      n(r.nodeCpuPct),
      n(r.natsCpuPct),
      r.loadAvg1m,
      r.failedRequests,
    ]),
  );
  return [
    header,
    `${settings.proxies} proxies, ${settings.durationMs} ms per measurement after ${settings.warmupMs} ms warm-up, ${settings.repeats} interleaved repeats (medians; ratio = median of per-repeat ratios)`,
    "",
    summary,
    "",
    "Every measurement (CPU in percent of one core):",
    "",
    all,
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
      const nc = await connect({ servers: nats.url, name });
      connections.push(nc);
      return nc;
    };
    const prefix = `bench${randomUUID().replaceAll("-", "").slice(0, 8)}`;
    const config = resolveConfig({ prefix, nats: nats.url });
    const load = await connectAs("bench-load");
    if (settings.systems.includes("leasehold")) {
      service = await startService({ nc: await connectAs("leasehold-service"), config, logger: pino({ level: "silent" }) });
      // Ample capacity: every acquisition can succeed, so the figures measure turns, not refusals.
      const maxLeases = Math.max(...settings.concurrency) * 4;
      for (let i = 0; i < settings.proxies; i++) {
        const reply = await load.request(
          `${prefix}.v1.proxy.register`,
          json({ proxy: `proxy-${String(i).padStart(3, "0")}`, maxLeases, latencyMs: i % 7 }),
          { timeout: REQUEST_TIMEOUT_MS },
        );
        if (!succeeded(reply)) throw new Error(`register failed: ${reply.string()}`);
      }
    }
    if (settings.systems.includes("ceiling")) ceiling = await startCeiling(await connectAs("bench-ceiling"), prefix, config.dedupWindowMs);

    const runs: Run[] = [];
    for (let repeat = 1; repeat <= settings.repeats; repeat++) {
      for (const concurrency of settings.concurrency) {
        // Alternate which system goes first so slow drift in the machine's load does not favour one.
        const order = repeat % 2 === 1 ? settings.systems : [...settings.systems].reverse();
        for (const system of order) {
          const pair =
            system === "leasehold"
              ? leaseholdPair(load, prefix, settings.ttlMs)
              : ceilingPair(load, prefix, settings.proxies, settings.ttlMs);
          const run = await measure(pair, system, concurrency, repeat, settings, nats);
          runs.push(run);
          progress(
            `repeat ${repeat} in-flight ${concurrency} ${system}: ${round(run.pairsPerSec)} pairs/s, p50 ${round(run.p50Ms, 2)} ms, p99 ${round(run.p99Ms, 2)} ms, node ${round(run.nodeCpuPct)}% nats ${round(run.natsCpuPct)}%, failed ${run.failedRequests}`,
          );
        }
      }
    }
    const header = `node ${machine.node}, nats-server ${machine.natsServer}, ${machine.cpuModel} x ${machine.cores} cores (${machine.platform}), load average at start ${machine.loadAvgAtStart.join(" ")}`;
    if (settings.json) {
      process.stdout.write(
        `${JSON.stringify({ date: new Date().toISOString(), argv: process.argv.slice(2), settings, machine, runs }, null, 2)}\n`,
      );
    } else {
      process.stdout.write(report(settings, runs, header));
    }
  } finally {
    process.off("SIGINT", onSignal);
    await stopAll();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`);
  process.exitCode = 1;
});
