/**
 * Route acquire benchmark: `route.acquire` requests per second through one
 * in-process leasehold service, on the reuse path (each worker asks for its
 * own existing conversation again) and on the new-placement path (each
 * request is a new conversation, placed by the chooser), with 1 and 64
 * requests in flight, beside the same-run ceiling: a trivial responder that
 * does one JetStream publish per request (message id, expected last subject
 * sequence, an event-sized payload) and nothing else.
 *
 *   npx tsx bench/routes.ts [--duration-ms 5000] [--warmup-ms 1000]
 *                           [--concurrency 1,64] [--repeats 3]
 *                           [--paths reuse,place] [--hosts 8]
 *                           [--chooser least-loaded|rendezvous] [--json]
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

type Path = "reuse" | "place";
type System = "leasehold" | "ceiling";

interface Settings {
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly concurrency: readonly number[];
  readonly repeats: number;
  readonly paths: readonly Path[];
  readonly hosts: number;
  readonly chooser: "least-loaded" | "rendezvous";
  readonly json: boolean;
}

interface Run {
  readonly path: Path;
  readonly system: System;
  readonly concurrency: number;
  readonly repeat: number;
  readonly requestsPerSec: number;
  readonly failed: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly nodeCpuPct: number;
  readonly natsCpuPct: number;
  readonly loadAvg1m: number;
  /** Events the leasehold runs appended per successful request (0 for the ceiling). */
  readonly eventsPerRequest: number;
}

/** One request for a worker; resolves true on success. */
type RequestFn = (worker: number) => Promise<boolean>;

const TIMEOUT_MS = 10_000;
const encoder = new TextEncoder();
const json = (v: unknown): Uint8Array => encoder.encode(JSON.stringify(v));
const succeeded = (m: Msg) => !m.headers?.get("Nats-Service-Error-Code");

function parseSettings(): Settings {
  const { values } = parseArgs({
    options: {
      "duration-ms": { type: "string", default: "5000" },
      "warmup-ms": { type: "string", default: "1000" },
      concurrency: { type: "string", default: "1,64" },
      repeats: { type: "string", default: "3" },
      paths: { type: "string", default: "reuse,place" },
      hosts: { type: "string", default: "8" },
      chooser: { type: "string", default: "least-loaded" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(
      "usage: npx tsx bench/routes.ts [--duration-ms N] [--warmup-ms N] [--concurrency 1,64] [--repeats N] [--paths reuse,place] [--hosts N] [--chooser least-loaded|rendezvous] [--json]\n",
    );
    process.exit(0);
  }
  const positive = (name: string, raw: string) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive whole number, got ${raw}`);
    return n;
  };
  const paths = values.paths.split(",").map((p) => p.trim());
  for (const p of paths) if (p !== "reuse" && p !== "place") throw new Error(`--paths: unknown path ${p}`);
  if (values.chooser !== "least-loaded" && values.chooser !== "rendezvous") throw new Error(`--chooser: unknown chooser ${values.chooser}`);
  return {
    durationMs: positive("duration-ms", values["duration-ms"]),
    warmupMs: values["warmup-ms"] === "0" ? 0 : positive("warmup-ms", values["warmup-ms"]),
    concurrency: values.concurrency.split(",").map((c) => positive("concurrency", c.trim())),
    repeats: positive("repeats", values.repeats),
    paths: paths as Path[],
    hosts: positive("hosts", values.hosts),
    chooser: values.chooser,
    json: values.json,
  };
}

/** Reuse: every worker asks again for its own conversation (placed during warm-up). New placement: a new conversation every time. */
function leaseholdRequest(nc: NatsConnection, prefix: string, path: Path, tag: string, candidates: readonly string[]): RequestFn {
  const subject = `${prefix}.v1.route.acquire`;
  let n = 0;
  return async (worker) => {
    const fp = path === "reuse" ? "conversation" : `c${++n}`;
    try {
      const reply = await nc.request(subject, json({ route: `${tag}-w${worker}`, fp, model: "m", candidates }), { timeout: TIMEOUT_MS });
      return succeeded(reply);
    } catch {
      return false;
    }
  };
}

/** The ceiling: the same request body to a responder doing one JetStream publish per request. */
function ceilingRequest(nc: NatsConnection, prefix: string, tag: string, candidates: readonly string[]): RequestFn {
  const subject = `${prefix}.ceiling.v1.acquire`;
  let n = 0;
  return async (worker) => {
    try {
      const reply = await nc.request(subject, json({ route: `${tag}-w${worker}`, fp: `c${++n}`, model: "m", candidates }), { timeout: TIMEOUT_MS });
      return succeeded(reply);
    } catch {
      return false;
    }
  };
}

async function startCeiling(nc: NatsConnection, prefix: string): Promise<{ stop(): Promise<void> }> {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({
    name: `${prefix.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_CEILING`,
    subjects: [`${prefix}.ceiling.events.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    duplicate_window: nanos(120_000),
    deny_delete: true,
    deny_purge: true,
    allow_direct: true,
    num_replicas: 1,
  });
  const js = jetstream(nc);
  // The size and shape of a RouteLeasePlaced envelope.
  const payload = json({
    type: "RouteLeasePlaced",
    v: 1,
    at: new Date().toISOString(),
    kind: "route",
    id: "place-w63",
    data: { fp: "c12345", model: "m", host: "h7", from: "", reason: "new", reused: false },
  });
  const lastSeq = new Map<string, number>();
  const sub = nc.subscribe(`${prefix}.ceiling.v1.acquire`, {
    queue: "ceiling",
    callback: (_err, msg) => {
      const { route } = msg.json<{ route: string }>();
      const subject = `${prefix}.ceiling.events.${route}`;
      js.publish(subject, payload, { msgID: nuid.next(), expect: { lastSubjectSequence: lastSeq.get(subject) ?? 0 }, timeout: 5000 }).then(
        (ack) => {
          lastSeq.set(subject, ack.seq);
          msg.respond(json({ host: "h1", reused: false }));
        },
        (e: Error) => {
          const h = natsHeaders();
          h.set("Nats-Service-Error-Code", "503");
          h.set("Nats-Service-Error", e.message.replace(/[\r\n]+/g, " "));
          msg.respond(json({ error: { code: "UNAVAILABLE", message: e.message } }), { headers: h });
        },
      );
    },
  });
  return { stop: () => sub.drain() };
}

async function measure(request: RequestFn, settings: Settings, nats: BenchNats, concurrency: number, events: () => Promise<number>) {
  const state = { phase: "warmup" as "warmup" | "measure" | "stop" };
  const latencies: number[] = [];
  let failed = 0;
  const workers = Array.from({ length: concurrency }, async (_, worker) => {
    while (state.phase !== "stop") {
      const t0 = performance.now();
      const ok = await request(worker);
      if ((state.phase as string) === "measure") {
        if (ok) latencies.push(performance.now() - t0);
        else failed++;
      }
    }
  });
  await sleep(settings.warmupMs);
  const events0 = await events();
  state.phase = "measure";
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const nats0 = nats.cpuSeconds();
  await sleep(settings.durationMs);
  state.phase = "stop";
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const nats1 = nats.cpuSeconds();
  const count = latencies.length;
  await Promise.all(workers);
  const events1 = await events();
  return {
    requestsPerSec: count / seconds,
    failed,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    nodeCpuPct: ((cpu.user + cpu.system) / 1e6 / seconds) * 100,
    natsCpuPct: nats0 === undefined || nats1 === undefined ? Number.NaN : ((nats1 - nats0) / seconds) * 100,
    loadAvg1m: round(loadavg()[0] ?? Number.NaN, 2),
    // Includes the requests still in flight when measuring stopped, so it is approximate.
    eventsPerRequest: count === 0 ? 0 : (events1 - events0) / count,
  };
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
    const config = resolveConfig({ prefix, nats: nats.url, routeChooser: settings.chooser });
    service = await startService({ nc: await connectAs("leasehold-service"), config, logger: pino({ level: "silent" }) });
    ceiling = await startCeiling(await connectAs("bench-ceiling"), prefix);
    const load = await connectAs("bench-load");
    const hosts = Array.from({ length: settings.hosts }, (_, i) => `h${i}`);
    for (const host of hosts) {
      const reply = await load.request(`${prefix}.v1.host.set`, json({ host, healthy: true }), { timeout: TIMEOUT_MS });
      if (!succeeded(reply)) throw new Error(`host.set ${host} failed: ${reply.string()}`);
    }
    const svc = service;
    // Only route events are appended to the event stream while measuring (hosts were set above).
    const routeEvents = () => svc.log.lastSeq();

    const runs: Run[] = [];
    for (let repeat = 1; repeat <= settings.repeats; repeat++) {
      for (const path of settings.paths) {
        for (const concurrency of settings.concurrency) {
          const systems: System[] = repeat % 2 === 1 ? ["leasehold", "ceiling"] : ["ceiling", "leasehold"];
          for (const system of systems) {
            const tag = `${path}-c${concurrency}-r${repeat}`;
            const request = system === "leasehold" ? leaseholdRequest(load, prefix, path, tag, hosts) : ceilingRequest(load, prefix, tag, hosts);
            const m = await measure(request, settings, nats, concurrency, system === "leasehold" ? routeEvents : () => Promise.resolve(0));
            const run: Run = { path, system, concurrency, repeat, ...m };
            runs.push(run);
            progress(
              `repeat ${repeat} ${path} in-flight ${concurrency} ${system}: ${round(run.requestsPerSec)} req/s, p50 ${round(run.p50Ms, 2)} ms, p99 ${round(run.p99Ms, 2)} ms, node ${round(run.nodeCpuPct)}% nats ${round(run.natsCpuPct)}%, failed ${run.failed}`,
            );
          }
        }
      }
    }

    const rows = settings.paths.flatMap((path) =>
      settings.concurrency.map((concurrency) => {
        const of = (system: System) => runs.filter((r) => r.path === path && r.concurrency === concurrency && r.system === system);
        const l = of("leasehold");
        const c = of("ceiling");
        const ratios = l.map((r) => r.requestsPerSec / (c.find((x) => x.repeat === r.repeat)?.requestsPerSec ?? Number.NaN));
        return {
          path,
          concurrency,
          leasehold: round(median(l.map((r) => r.requestsPerSec))),
          leaseholdP50: round(median(l.map((r) => r.p50Ms)), 2),
          leaseholdP99: round(median(l.map((r) => r.p99Ms)), 2),
          ceiling: round(median(c.map((r) => r.requestsPerSec))),
          ceilingP50: round(median(c.map((r) => r.p50Ms)), 2),
          ratio: round(median(ratios), 2),
          failed: l.reduce((n, r) => n + r.failed, 0) + c.reduce((n, r) => n + r.failed, 0),
        };
      }),
    );
    if (settings.json) {
      process.stdout.write(`${JSON.stringify({ date: new Date().toISOString(), settings, machine, rows, runs }, null, 2)}\n`);
      return;
    }
    process.stdout.write(
      [
        `node ${machine.node}, nats-server ${machine.natsServer}, ${machine.cpuModel} x ${machine.cores} cores (${machine.platform}), load average at start ${machine.loadAvgAtStart.join(" ")}`,
        `chooser ${settings.chooser}, ${settings.hosts} hosts; ${settings.durationMs} ms per measurement after ${settings.warmupMs} ms warm-up, ${settings.repeats} interleaved repeats (medians)`,
        "",
        markdownTable(
          ["path", "in flight", "leasehold acquires/s", "p50 ms", "p99 ms", "ceiling req/s", "ceiling p50 ms", "leasehold/ceiling", "failed"],
          rows.map((r) => [r.path, r.concurrency, r.leasehold, r.leaseholdP50, r.leaseholdP99, r.ceiling, r.ceilingP50, r.ratio, r.failed]),
        ),
        "",
        "Every measurement (CPU in percent of one core):",
        "",
        markdownTable(
          ["repeat", "path", "in flight", "system", "req/s", "p50 ms", "p99 ms", "events/request", "node CPU %", "nats-server CPU %", "load 1m", "failed"],
          runs.map((r) => [
            r.repeat,
            r.path,
            r.concurrency,
            r.system,
            round(r.requestsPerSec),
            round(r.p50Ms, 2),
            round(r.p99Ms, 2),
            r.system === "ceiling" ? "1" : round(r.eventsPerRequest, 3),
            round(r.nodeCpuPct),
            round(r.natsCpuPct),
            r.loadAvg1m,
            r.failed,
          ]),
        ),
        "",
      ].join("\n"),
    );
  } finally {
    process.off("SIGINT", onSignal);
    await stopAll();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${(e as Error).stack ?? String(e)}\n`);
  process.exitCode = 1;
});
