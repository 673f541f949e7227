/**
 * What one request costs the responder that answers it: CPU time and bytes
 * allocated, per request, of the leasehold service against the one-publish
 * ceiling responder, each alone in its own child process
 * (bench/request-cost-child.ts) under the same lock workload (acquire+release
 * pairs on 10,000 cold names; or proxy acquire+release pairs over 100
 * proxies, or new route placements over 8 hosts) from this process. The load generator's own
 * cost is not in either figure, unlike bench/locks.ts's whole-process CPU.
 *
 * CPU: the child's user+system time from /proc over the measured window.
 * Allocation: the child runs with `--trace-gc-nvp`; every garbage collection
 * prints the bytes allocated since the previous one, and the bench sums those
 * printed during the window.
 *
 * Both children run JavaScript built by tsc (into
 * node_modules/.cache/leasehold-bench, at the start of each run), as
 * production does, not through tsx: esbuild, under tsx, wraps every closure it
 * creates in a `__name` call (13 ms of 2.6 s in one profile of the service).
 *
 *   npx tsx bench/request-cost.ts [--concurrency 64] [--repeats 2] [--duration-ms 5000] [--warmup-ms 2000]
 *                                 [--workload locks|proxies|place] [--profile-dir DIR] [--json]
 *
 * `--workload`: the requests of bench/locks.ts (`--names cold`), of
 * bench/proxies.ts (100 proxies) or of bench/routes.ts (`--paths place
 * --hosts 8`), against the same ceiling those benches use.
 *
 * `--profile-dir`: the children also run with `--cpu-prof`, each into a
 * folder of its own under DIR (the largest file is the main thread's); read
 * one with `npx tsx bench/profile-share.ts <file> --window-ms <duration>`.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { NatsConnection } from "@nats-io/nats-core";
import { ceilingPair, leaseholdPair, nameChooser } from "./locks.ts";
import { ceilingPair as proxyCeilingPair, leaseholdPair as proxyPair, registerProxies } from "./proxies.ts";
import { ceilingRequest as routeCeilingRequest, leaseholdRequest as routeRequest, setHosts } from "./routes.ts";
import { serviceNodeArgs } from "./service-process.ts";
import {
  alternate,
  closedLoop,
  figure,
  markdownTable,
  median,
  oneOf,
  parseBenchArgs,
  printJson,
  processCpuSeconds,
  round,
  runBench,
  withBench,
  type WorkFn,
} from "./support.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BUILD_DIR = join(ROOT, "node_modules", ".cache", "leasehold-bench");
const CHILD = join(BUILD_DIR, "bench", "request-cost-child.js");
const TTL_MS = 10_000;
type System = "ceiling" | "leasehold";
const WORKLOADS = ["locks", "proxies", "place"] as const;
type Workload = (typeof WORKLOADS)[number];
/** The proxies of the proxies workload and the hosts of the place workload (as bench/proxies.ts and bench/routes.ts default to). */
const PROXIES = 100;
const HOSTS = 8;

/**
 * Sets up what `workload` needs on a fresh responder (proxies, hosts) and
 * returns its unit of work: a pair, or one placement.
 */
async function workOf(
  workload: Workload,
  system: System,
  load: NatsConnection,
  prefix: string,
  tag: string,
  concurrency: number,
): Promise<WorkFn> {
  if (workload === "proxies") {
    if (system === "ceiling") return proxyCeilingPair(load, prefix, TTL_MS);
    await registerProxies(load, prefix, PROXIES, concurrency);
    return proxyPair(load, prefix, TTL_MS);
  }
  if (workload === "place") {
    const hosts = Array.from({ length: HOSTS }, (_, i) => `h${i}`);
    if (system === "ceiling") return routeCeilingRequest(load, prefix, tag, hosts);
    await setHosts(load, prefix, HOSTS);
    return routeRequest(load, prefix, "place", tag, hosts);
  }
  const chooser = nameChooser(tag, "cold", concurrency);
  return system === "leasehold" ? leaseholdPair(load, prefix, chooser, TTL_MS) : ceilingPair(load, prefix, chooser, TTL_MS);
}

/** A responder child and the allocation its garbage collections reported, with when each report arrived. */
interface Responder {
  readonly child: ChildProcess;
  readonly allocations: { readonly at: number; readonly bytes: number }[];
  stderr: string;
}

function spawnResponder(
  system: System,
  workload: Workload,
  url: string,
  prefix: string,
  profileDir: string | undefined,
): Promise<Responder> {
  // One folder per child: Node writes a profile per thread (the loader hooks' thread too), named by pid and thread.
  const profile = profileDir === undefined ? [] : ["--cpu-prof", "--cpu-prof-dir", `${profileDir}/${system}-${prefix}`];
  // The service's Node flags (LEASEHOLD_BENCH_SERVICE_NODE_ARGS, e.g. to try a V8 setting) go to the leasehold child only.
  const extra = system === "leasehold" ? serviceNodeArgs : [];
  const child = spawn(
    process.execPath,
    ["--trace-gc-nvp", ...extra, ...profile, CHILD, "--system", system, "--workload", workload, "--nats", url, "--prefix", prefix],
    {
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const responder: Responder = { child, allocations: [], stderr: "" };
  child.stderr.on("data", (c: Buffer) => (responder.stderr = (responder.stderr + c.toString()).slice(-4000)));
  return new Promise((resolve, reject) => {
    let buffered = "";
    child.once("exit", (code) => reject(new Error(`${system} exited (${code}) before it was ready: ${responder.stderr}`)));
    child.stdout.on("data", (c: Buffer) => {
      buffered += c.toString();
      let nl;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        const allocated = / allocated=(\d+)/.exec(line);
        if (allocated !== null) responder.allocations.push({ at: performance.now(), bytes: Number(allocated[1]) });
        else if (line.startsWith('{"ready":true}')) resolve(responder);
      }
    });
  });
}

/** Compiles the child and everything it imports with the project's own compiler options. */
function buildChild(): void {
  rmSync(BUILD_DIR, { recursive: true, force: true });
  mkdirSync(BUILD_DIR, { recursive: true });
  const config = join(BUILD_DIR, "tsconfig.json");
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(ROOT, "tsconfig.json"),
      compilerOptions: { noEmit: false, declaration: false, sourceMap: false, rootDir: ROOT, outDir: BUILD_DIR },
      files: [join(ROOT, "bench", "request-cost-child.ts")],
      include: [],
    }),
  );
  execFileSync(process.execPath, [join(ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", config], { stdio: "inherit" });
  // The package's own file: it makes the output ES modules, and src/version.ts reads it one level above src/.
  copyFileSync(join(ROOT, "package.json"), join(BUILD_DIR, "package.json"));
}

async function stopResponder(r: Responder): Promise<void> {
  const exited = new Promise((resolve) => r.child.once("exit", resolve));
  r.child.kill("SIGTERM");
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  if (r.child.exitCode === null) r.child.kill("SIGKILL");
}

interface Run {
  readonly system: System;
  readonly repeat: number;
  readonly concurrency: number;
  readonly requestsPerSec: number;
  readonly cpuUsPerRequest: number;
  readonly kbPerRequest: number;
  readonly failedRequests: number;
}

async function main(): Promise<void> {
  const usage =
    "usage: npx tsx bench/request-cost.ts [--concurrency 64] [--repeats 2] [--duration-ms 5000] [--warmup-ms 2000] [--workload locks|proxies|place] [--profile-dir DIR] [--json]";
  const { values, common } = parseBenchArgs(usage, { "profile-dir": { type: "string" }, workload: { type: "string", default: "locks" } });
  const workload = oneOf("workload", "workload", values.workload, WORKLOADS);
  const settings = {
    ...common,
    concurrency: values.concurrency === "1,64" ? [64] : common.concurrency,
    repeats: values.repeats === "3" ? 2 : common.repeats,
    durationMs: values["duration-ms"] === "4000" ? 5000 : common.durationMs,
    warmupMs: values["warmup-ms"] === "1000" ? 2000 : common.warmupMs,
  };
  const profileDir = values["profile-dir"];
  if (profileDir !== undefined) mkdirSync(profileDir, { recursive: true });
  buildChild();
  await withBench({ noAsyncTraces: true }, async (bench) => {
    const load = await bench.connect("bench-load");
    const runs: Run[] = [];
    for (let repeat = 1; repeat <= settings.repeats; repeat++) {
      for (const concurrency of settings.concurrency) {
        for (const system of alternate<System>(["ceiling", "leasehold"], repeat)) {
          const prefix = `${bench.prefix}r${repeat}c${concurrency}${system[0]}`;
          const responder = await spawnResponder(system, workload, bench.nats.url, prefix, profileDir);
          try {
            const pair = await workOf(workload, system, load, prefix, `r${repeat}c${concurrency}`, concurrency);
            const pid = responder.child.pid!;
            let t0 = 0;
            let cpu0 = 0;
            const w = await closedLoop(pair, concurrency, settings, bench.nats, () => {
              t0 = performance.now();
              cpu0 = processCpuSeconds(pid) ?? Number.NaN;
              return Promise.resolve();
            });
            const cpu = (processCpuSeconds(pid) ?? Number.NaN) - cpu0;
            const t1 = performance.now();
            const bytes = responder.allocations.filter((a) => a.at >= t0 && a.at <= t1).reduce((sum, a) => sum + a.bytes, 0);
            // Requests answered from the start of the window to the end of the tail closedLoop waits for.
            const requests = w.samples + w.failedRequests;
            const run: Run = {
              system,
              repeat,
              concurrency,
              requestsPerSec: w.samples / w.seconds,
              cpuUsPerRequest: (cpu * 1e6) / requests,
              kbPerRequest: bytes / 1024 / requests,
              failedRequests: w.failedRequests,
            };
            runs.push(run);
            bench.progress(
              `repeat ${repeat} in-flight ${concurrency} ${system}: ${round(run.requestsPerSec)} req/s, ${round(run.cpuUsPerRequest, 1)} µs CPU and ${round(run.kbPerRequest, 1)} KB per request, failed ${run.failedRequests}, took ${round((t1 - t0) / 1000, 1)} s`,
            );
          } finally {
            await stopResponder(responder);
          }
        }
      }
    }
    if (values.json) {
      printJson({ argv: process.argv.slice(2), settings, workload, machine: bench.machine, runs });
      return;
    }
    const rows = settings.concurrency.map((c) => {
      const of = (system: System, f: (r: Run) => number) => median(runs.filter((r) => r.system === system && r.concurrency === c).map(f));
      const ratio = (f: (r: Run) => number) => of("leasehold", f) / of("ceiling", f);
      return [
        c,
        `${figure(
          of("leasehold", (r) => r.cpuUsPerRequest),
          1,
        )} / ${figure(
          of("ceiling", (r) => r.cpuUsPerRequest),
          1,
        )}`,
        figure(
          ratio((r) => r.cpuUsPerRequest),
          2,
        ),
        `${figure(
          of("leasehold", (r) => r.kbPerRequest),
          1,
        )} / ${figure(
          of("ceiling", (r) => r.kbPerRequest),
          1,
        )}`,
        `${figure(of("leasehold", (r) => r.requestsPerSec))} / ${figure(of("ceiling", (r) => r.requestsPerSec))}`,
      ];
    });
    process.stdout.write(
      `${markdownTable(
        [
          "in flight",
          "CPU µs per request, leasehold / ceiling",
          "CPU ratio",
          "KB allocated per request, leasehold / ceiling",
          "req/s, leasehold / ceiling",
        ],
        rows,
      )}\n\n${markdownTable(
        ["repeat", "in flight", "system", "req/s", "CPU µs/request", "KB/request", "failed"],
        runs.map((r) => [
          r.repeat,
          r.concurrency,
          r.system,
          round(r.requestsPerSec),
          round(r.cpuUsPerRequest, 1),
          round(r.kbPerRequest, 1),
          r.failedRequests,
        ]),
      )}\n`,
    );
  });
}

runBench(main);
