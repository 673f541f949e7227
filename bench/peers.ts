/**
 * `npm run bench:peers`: bench/locks.ts's lock workload (acquire + release
 * pairs on cold names, 1 and 64 in flight) on leasehold — on its own
 * nats-server at the default sync and with `sync_interval: always` — and on
 * etcd and Redis at their default durability and with an fsync per write,
 * all measured in one run, interleaved, with the ratios issue 12 names.
 * The JSON result is saved in bench/results/. `--help` explains the options.
 *
 *   npx tsx bench/peers.ts [--systems leasehold,etcd,...] [--concurrency 1,64]
 *                          [--duration-ms 4000] [--repeats 3] [--json]
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { Etcd3 } from "etcd3";
import { Redis } from "ioredis";
import { pino } from "pino";
import { resolveConfig } from "../src/config.ts";
import { startService } from "../src/service/start-service.ts";
import { ceilingPair, leaseholdPair, lockCeilingOptions, nameChooser } from "./locks.ts";
import { etcdLockPair, REDIS_CLIENT_OPTIONS, REDIS_RELEASE_LUA, redisLockPair, type NameChooser } from "./peer-locks.ts";
import { peerRatios, peerRunsTable, peersTable, summarizePeers, type PeerRun } from "./peer-report.ts";
import { ensureBinaries, startEtcd, startRedis, type PeerServer } from "./peer-servers.ts";
import { PEER_DURABILITY, PEERS_USAGE, parsePeerSettings, type PeerSettings, type PeerSystem } from "./peer-settings.ts";
import {
  alternate,
  closedLoop,
  machineInfo,
  machineLine,
  REQUEST_TIMEOUT_MS,
  round,
  runBench,
  startBenchNats,
  startCeiling,
  waitForQuietMachine,
  type WorkFn,
} from "./support.ts";

const BENCH_DIR = fileURLToPath(new URL(".", import.meta.url));
/** How long each cleanup step may take before the next one runs anyway. */
const CLEANUP_STEP_MS = 15_000;

/** One system ready to measure. */
interface Target {
  readonly system: PeerSystem;
  /** Server version and command line, for the record. */
  readonly server: {
    readonly version: string;
    readonly url: string;
    readonly command?: readonly string[];
    readonly settings?: Record<string, string>;
  };
  cpuSeconds(): number | undefined;
  /** The pair of one window, on the names `names` picks. */
  pair(names: NameChooser): WorkFn;
}

/** Things to stop at the end, last started first stopped; each step bounded, errors ignored (the others still run). */
class Cleanup {
  private readonly steps: (() => unknown)[] = [];
  private running: Promise<void> | undefined;
  push(step: () => unknown): void {
    this.steps.push(step);
  }
  run(): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps.reverse()) {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLEANUP_STEP_MS)));
        await Promise.race([
          Promise.resolve()
            .then(step)
            .catch(() => undefined),
          timeout,
        ]);
        clearTimeout(timer);
      }
    })();
    return this.running;
  }
}

/** What runs on one private nats-server: what to measure on it, given a connection maker and a fresh prefix. */
type OnNats = (connectAs: (name: string) => Promise<NatsConnection>, prefix: string, natsUrl: string) => Promise<Target["pair"]>;

/** A private nats-server (`sync_interval: always` when `syncAlways`) with `onNats` started on it; everything stopped by `cleanup`. */
async function startOnNats(system: PeerSystem, syncAlways: boolean, cleanup: Cleanup, onNats: OnNats): Promise<Target> {
  const nats = await startBenchNats(syncAlways ? { syncInterval: "always" } : {});
  cleanup.push(() => nats.stop());
  const connectAs = async (name: string): Promise<NatsConnection> => {
    // As src/cli/serve.ts connects the service: no async stack trace captured per request.
    const nc = await connect({ servers: nats.url, name, noAsyncTraces: true, timeout: 10_000 });
    cleanup.push(() => nc.drain());
    return nc;
  };
  const pair = await onNats(connectAs, `peers${system.replace("-", "")}`, nats.url);
  return {
    system,
    server: { version: `nats-server ${nats.version}`, url: nats.url, settings: { sync_interval: syncAlways ? "always" : "default (2m)" } },
    cpuSeconds: () => nats.cpuSeconds(),
    pair,
  };
}

/** leasehold's lock service on a private nats-server, driven over its own connection. */
function startLeasehold(system: PeerSystem, syncAlways: boolean, settings: PeerSettings, cleanup: Cleanup): Promise<Target> {
  return startOnNats(system, syncAlways, cleanup, async (connectAs, prefix, natsUrl) => {
    const config = resolveConfig({
      prefix,
      nats: natsUrl,
      lockTtlMs: settings.ttlMs,
      maxTtlMs: Math.max(settings.ttlMs, 30_000),
      replicas: 1,
    });
    const service = await startService({ nc: await connectAs("leasehold-service"), config, logger: pino({ level: "silent" }) });
    cleanup.push(() => service.stop());
    const load = await connectAs("bench-load");
    return (names) => leaseholdPair(load, prefix, names, settings.ttlMs);
  });
}

/** bench/locks.ts's one-publish ceiling on a private nats-server: what nats-server allows a lock service at that sync setting. */
function startNatsCeiling(system: PeerSystem, syncAlways: boolean, settings: PeerSettings, cleanup: Cleanup): Promise<Target> {
  return startOnNats(system, syncAlways, cleanup, async (connectAs, prefix) => {
    const options = lockCeilingOptions(resolveConfig({ prefix }).dedupWindowMs, 1);
    const ceiling = await startCeiling(await connectAs("bench-ceiling"), prefix, options);
    cleanup.push(() => ceiling.stop());
    const load = await connectAs("bench-load");
    return (names) => ceilingPair(load, prefix, names, settings.ttlMs);
  });
}

/** One etcd member and a client holding one lease for the run (see peer-locks.ts). */
async function startEtcdTarget(system: PeerSystem, noFsync: boolean, settings: PeerSettings, cleanup: Cleanup): Promise<Target> {
  const server: PeerServer = await startEtcd(noFsync);
  cleanup.push(() => server.stop());
  const client = new Etcd3({
    hosts: server.url,
    dialTimeout: 5000,
    // Every unary call has a deadline; the lease's keep-alive stream has none (it lives for the run).
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + REQUEST_TIMEOUT_MS }),
  });
  cleanup.push(() => client.close());
  const lease = client.lease(Math.max(1, Math.ceil(settings.ttlMs / 1000)));
  const leaseId = await lease.grant();
  cleanup.push(() => lease.revoke());
  return {
    system,
    server: { version: server.version, url: server.url, command: server.command },
    cpuSeconds: () => server.cpuSeconds(),
    pair: (names) => etcdLockPair(client, leaseId, names),
  };
}

/** One redis-server and one ioredis connection (commands pipelined on it, as an application shares its client). */
async function startRedisTarget(system: PeerSystem, aof: boolean, settings: PeerSettings, cleanup: Cleanup): Promise<Target> {
  const server = await startRedis(aof ? "aof-always" : "default");
  cleanup.push(() => server.stop());
  const [host, port] = server.url.split(":");
  const redis = new Redis({ host, port: Number(port), lazyConnect: true, ...REDIS_CLIENT_OPTIONS });
  redis.on("error", () => undefined); // failures surface as rejected commands, counted as failed requests
  cleanup.push(() => redis.disconnect());
  await redis.connect();
  const releaseSha = (await redis.script("LOAD", REDIS_RELEASE_LUA)) as string;
  // What the server really runs with, read back rather than assumed.
  const config = await redis.config("GET", "save");
  const aofConfig = await redis.config("GET", "appendonly");
  const fsyncConfig = await redis.config("GET", "appendfsync");
  return {
    system,
    server: {
      version: server.version,
      url: server.url,
      command: server.command,
      settings: { save: config[1] ?? "", appendonly: aofConfig[1] ?? "", appendfsync: fsyncConfig[1] ?? "" },
    },
    cpuSeconds: () => server.cpuSeconds(),
    pair: (names) => redisLockPair(redis, releaseSha, names, settings.ttlMs),
  };
}

function startTarget(system: PeerSystem, settings: PeerSettings, cleanup: Cleanup): Promise<Target> {
  switch (system) {
    case "leasehold":
      return startLeasehold(system, false, settings, cleanup);
    case "leasehold-sync":
      return startLeasehold(system, true, settings, cleanup);
    case "ceiling":
      return startNatsCeiling(system, false, settings, cleanup);
    case "ceiling-sync":
      return startNatsCeiling(system, true, settings, cleanup);
    case "etcd":
      return startEtcdTarget(system, false, settings, cleanup);
    case "etcd-nofsync":
      return startEtcdTarget(system, true, settings, cleanup);
    case "redis":
      return startRedisTarget(system, false, settings, cleanup);
    case "redis-aof":
      return startRedisTarget(system, true, settings, cleanup);
  }
}

async function main(): Promise<void> {
  const settings = parsePeerSettings(process.argv.slice(2), join(BENCH_DIR, "results"));
  if (settings === "help") {
    process.stdout.write(`${PEERS_USAGE}\n`);
    return;
  }
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  const cleanup = new Cleanup();
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    progress(`${signal}: stopping every server this bench started`);
    stopping = true;
    void cleanup.run().finally(() => process.exit(130));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    const binaries = [
      ...(settings.systems.some((s) => s.startsWith("etcd")) ? (["etcd"] as const) : []),
      ...(settings.systems.some((s) => s.startsWith("redis")) ? (["redis-server"] as const) : []),
    ];
    await ensureBinaries(binaries, progress);
    const quiet = await waitForQuietMachine(progress);
    const targets: Target[] = [];
    for (const system of settings.systems) {
      const target = await startTarget(system, settings, cleanup);
      progress(`${system}: ${target.server.version} at ${target.server.url} (${PEER_DURABILITY[system]})`);
      targets.push(target);
    }
    // machineLine() names the server itself, so the version goes in bare ("v2.10.27").
    const natsVersion = targets.find((t) => t.system.startsWith("leasehold"))?.server.version.replace(/^nats-server /, "");
    const machine = machineInfo(natsVersion ?? "not run");
    const started = new Date();
    const runs: PeerRun[] = [];
    for (let repeat = 1; repeat <= settings.repeats; repeat++) {
      for (const concurrency of settings.concurrency) {
        for (const target of alternate(targets, repeat)) {
          const names = nameChooser(`r${repeat}c${concurrency}`, "cold", concurrency);
          const pair = target.pair(names);
          // After Ctrl-C the requests fail at once; without a pause the workers would spin on
          // microtasks and starve the timers that bound the cleanup.
          const work: WorkFn = (worker, sample) => (stopping ? sleep(100).then(() => 1) : pair(worker, sample));
          const w = await closedLoop(work, concurrency, settings, target);
          const run: PeerRun = {
            system: target.system,
            repeat,
            concurrency,
            seconds: w.seconds,
            pairs: w.completed,
            failedRequests: w.failedRequests,
            pairsPerSec: w.completed / w.seconds,
            p50Ms: w.p50Ms,
            p99Ms: w.p99Ms,
            nodeCpuPct: w.nodeCpuPct,
            serverCpuPct: w.natsCpuPct,
            loadAvg1m: w.loadAvg1m,
          };
          runs.push(run);
          progress(
            `repeat ${repeat} in-flight ${concurrency} ${target.system}: ${round(run.pairsPerSec)} pairs/s, p50 ${round(run.p50Ms, 2)} ms, p99 ${round(run.p99Ms, 2)} ms, node ${round(run.nodeCpuPct)}% server ${round(run.serverCpuPct)}%, failed ${run.failedRequests}`,
          );
        }
      }
    }
    const summaries = summarizePeers(runs, settings.systems, settings.concurrency);
    const ratios = peerRatios(runs, settings.concurrency);
    const table = peersTable(summaries, ratios);
    const result = {
      date: new Date().toISOString(),
      started: started.toISOString(),
      argv: process.argv.slice(2),
      settings,
      machine,
      quietWait: quiet,
      servers: Object.fromEntries(targets.map((t) => [t.system, t.server])),
      durability: Object.fromEntries(settings.systems.map((s) => [s, PEER_DURABILITY[s]])),
      summaries,
      ratios,
      runs,
    };
    mkdirSync(settings.resultsDir, { recursive: true });
    const file = join(settings.resultsDir, `peers-${started.toISOString().replaceAll(":", "-").slice(0, 19)}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    if (settings.json) {
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    } else {
      const load = runs.map((r) => r.loadAvg1m);
      process.stdout.write(
        [
          machineLine(machine),
          `lock acquire+release pairs on cold names, ${settings.durationMs} ms per window after ${settings.warmupMs} ms warm-up, ${settings.repeats} interleaved repeats (medians; ratios = median of the per-repeat ratios); 1-minute load during the windows ${Math.min(...load)}–${Math.max(...load)}`,
          "",
          table,
          "",
          "Every window (CPU in percent of one core):",
          "",
          peerRunsTable(runs),
          "",
          `saved ${file}`,
          "",
        ].join("\n"),
      );
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await cleanup.run();
  }
}

runBench(main);
