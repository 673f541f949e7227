/**
 * Fair admission: what a client flooding the service costs another. One
 * `leasehold serve` process on a private nats-server per run; a measuring
 * client (this process) sends lock acquire+release pairs one at a time on
 * names of its own, first alone, then while a flooding client
 * (bench/flood-worker.ts, a process of its own at nice 19, one connection:
 * on two shared cores it would otherwise take the CPU the others' requests
 * need, which no admission in the service gives back) keeps
 * `--flood-in-flight` pairs in flight on other names, or with
 * `--flood-burst N` sends N acquires at once without waiting, or with
 * `--flood-durable N` stores N durable acquires in the command stream just
 * before the measuring starts. Each run takes one
 * `--max-active-requests` value of the list, the values alternated over
 * `--rounds`; 1000000 stands for no admission at all (no client ever waits
 * for its share); `--before <checkout>` adds that tree (built) with its
 * own defaults.
 *
 *   npx tsx bench/fairness.ts [--max-active 8,1000000] [--rounds 3] [--window-ms 4000] [--flood-in-flight 64] [--flood-burst N] [--flood-durable N] [--before <checkout>] [--json]
 *
 * Figures per run: the measuring client's pair p50 and p99 alone and under
 * the flood, the p50 ratio, the flood's pairs/s (acquires with a burst) and
 * UNAVAILABLE answers, and the service's RSS at the end of the flood.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import type { NatsConnection } from "@nats-io/nats-core";
import { firstAnswer, rssMb, spawnServeOf, stopService, type ServiceChild } from "./service-process.ts";
import {
  json,
  markdownTable,
  median,
  parseOwnArgs,
  positiveInt,
  printJson,
  quantile,
  round,
  runBench,
  succeeded,
  withBench,
} from "./support.ts";

const USAGE =
  "usage: npx tsx bench/fairness.ts [--max-active 8,1000000] [--rounds 3] [--window-ms 4000] [--flood-in-flight 64] [--flood-burst N] [--flood-durable N] [--before <checkout>] [--json]";
const CLI = fileURLToPath(new URL("../bin/leasehold.js", import.meta.url));
const WORKER = fileURLToPath(new URL("./flood-worker.ts", import.meta.url));

function parse() {
  const values = parseOwnArgs(USAGE, {
    "max-active": { type: "string", default: "8,1000000" },
    rounds: { type: "string", default: "3" },
    "window-ms": { type: "string", default: "4000" },
    "flood-in-flight": { type: "string", default: "64" },
    "flood-burst": { type: "string", default: "0" },
    "flood-durable": { type: "string", default: "0" },
    before: { type: "string" },
    json: { type: "boolean", default: false },
  });
  return {
    systems: [
      ...values["max-active"].split(",").map((v) => ({
        name: `--max-active-requests ${v}`,
        cli: CLI,
        flags: ["--max-active-requests", String(positiveInt("max-active", v))],
      })),
      ...(values.before === undefined
        ? []
        : [{ name: `before (${values.before})`, cli: join(values.before, "bin/leasehold.js"), flags: [] }]),
    ],
    rounds: positiveInt("rounds", values.rounds),
    windowMs: positiveInt("window-ms", values["window-ms"]),
    floodInFlight: positiveInt("flood-in-flight", values["flood-in-flight"]),
    floodBurst: Number(values["flood-burst"]),
    floodDurable: Number(values["flood-durable"]),
    json: values.json,
  };
}
type Settings = ReturnType<typeof parse>;

/** One tree's `leasehold serve` with some flags. */
interface System {
  readonly name: string;
  readonly cli: string;
  readonly flags: readonly string[];
}

/** `leasehold serve` of `system` as a user runs it. */
function spawnServe(url: string, prefix: string, system: System): ServiceChild {
  return spawnServeOf(system.cli, ["--nats", url, "--prefix", prefix, "--http", "off", ...system.flags]);
}

/** Pair latencies (ms) of one client, one pair at a time, for `windowMs`. */
async function pairs(nc: NatsConnection, prefix: string, tag: string, windowMs: number): Promise<{ samples: number[]; failed: number }> {
  const samples: number[] = [];
  let failed = 0;
  const until = performance.now() + windowMs;
  for (let k = 0; performance.now() < until; k++) {
    const name = `measured-${tag}-${k}`;
    const t0 = performance.now();
    try {
      const acquired = await nc.request(`${prefix}.v1.lock.acquire`, json({ name, owner: "measured", ttlMs: 30_000 }), { timeout: 10_000 });
      if (!succeeded(acquired)) throw new Error(acquired.string());
      const etag = acquired.json<{ lease: { etag: string } }>().lease.etag;
      const released = await nc.request(`${prefix}.v1.lock.release`, json({ name, etag }), { timeout: 10_000 });
      if (!succeeded(released)) throw new Error(released.string());
      samples.push(performance.now() - t0);
    } catch {
      failed++;
    }
  }
  return { samples, failed };
}

/** The flooding client: started, and ready once it has done its first pairs. */
async function startFlood(url: string, prefix: string, inFlight: number, burst: number, durable: number) {
  const child = spawn(
    "nice",
    [
      "-n",
      "19",
      process.execPath,
      "--import",
      "tsx",
      WORKER,
      "--nats",
      url,
      "--prefix",
      prefix,
      "--in-flight",
      String(inFlight),
      "--burst",
      String(burst),
      "--durable",
      String(durable),
    ],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const ready = await lines.next();
  if (ready.done === true) throw new Error("the flood worker ended before it was ready");
  return {
    async stop(): Promise<{ pairs: number; unavailable: number; errors: number; seconds: number }> {
      child.kill("SIGTERM");
      const last = await lines.next();
      if (last.done === true) throw new Error("the flood worker ended without its figures");
      return JSON.parse(last.value) as { pairs: number; unavailable: number; errors: number; seconds: number };
    },
  };
}

async function oneRun(
  bench: { nats: { url: string }; connect(name: string): Promise<NatsConnection>; progress(l: string): void },
  system: System,
  settings: Settings,
) {
  const prefix = `fair${randomUUID().slice(0, 8)}`;
  const nc = await bench.connect("fairness");
  const service = spawnServe(bench.nats.url, prefix, system);
  try {
    await firstAnswer(nc, `${prefix}.v1.lock.get`, { name: "x" }, performance.now(), service.child);
    await pairs(nc, prefix, "warm", 1000);
    const alone = await pairs(nc, prefix, "alone", settings.windowMs);
    const flood = await startFlood(bench.nats.url, prefix, settings.floodInFlight, settings.floodBurst, settings.floodDurable);
    const flooded = await pairs(nc, prefix, "flooded", settings.windowMs);
    const f = await flood.stop();
    const aloneP50 = quantile(alone.samples, 0.5);
    const floodedP50 = quantile(flooded.samples, 0.5);
    const row = {
      system: system.name,
      aloneP50Ms: round(aloneP50, 2),
      floodedP50Ms: round(floodedP50, 2),
      floodedP99Ms: round(quantile(flooded.samples, 0.99), 2),
      floodedMaxMs: round(Math.max(...flooded.samples), 1),
      rssMb: rssMb(service.child.pid!),
      p50Ratio: round(floodedP50 / aloneP50, 2),
      measuredFailed: alone.failed + flooded.failed,
      floodPairsPerSec: round(f.pairs / f.seconds),
      floodUnavailable: f.unavailable,
      floodErrors: f.errors,
    };
    bench.progress(JSON.stringify(row));
    return row;
  } finally {
    await stopService(service);
    await nc.close();
  }
}

async function main(): Promise<void> {
  const settings = parse();
  await withBench({ noAsyncTraces: true, waitForQuiet: false }, async (bench) => {
    const rows: ({ round: number } & Awaited<ReturnType<typeof oneRun>>)[] = [];
    for (let r = 0; r < settings.rounds; r++) {
      const order = r % 2 === 0 ? settings.systems : [...settings.systems].reverse();
      for (const system of order) rows.push({ round: r + 1, ...(await oneRun(bench, system, settings)) });
    }
    if (settings.json) {
      printJson({ settings: { ...settings, systems: settings.systems.map((x) => x.name) }, machine: bench.machine, rows });
      return;
    }
    const summary = settings.systems.map(({ name }) => {
      const mine = rows.filter((r) => r.system === name);
      const ratios = mine.map((r) => r.p50Ratio);
      const spread = `${Math.min(...ratios)}–${Math.max(...ratios)}`;
      return [
        name,
        `${round(median(mine.map((r) => r.aloneP50Ms)), 2)} / ${round(median(mine.map((r) => r.floodedP50Ms)), 2)}`,
        `${round(median(ratios), 2)} (${spread})`,
        `${round(median(mine.map((r) => r.floodedP99Ms)), 2)} / ${round(median(mine.map((r) => r.floodedMaxMs)), 1)}`,
        round(median(mine.map((r) => r.floodPairsPerSec))),
        mine.reduce((s, r) => s + r.floodUnavailable, 0),
        round(median(mine.map((r) => r.rssMb))),
      ];
    });
    console.log(
      markdownTable(
        [
          "service",
          "measured p50 alone / flooded, ms",
          "ratio (median, spread)",
          "flooded p99 / max, ms",
          "flood answers/s (ok)",
          "flood UNAVAILABLE",
          "service RSS, MB",
        ],
        summary,
      ),
    );
  });
}

runBench(main);
