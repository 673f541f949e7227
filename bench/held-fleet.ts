/**
 * A bench that holds the fleet: lock acquire+release pairs through a
 * service that already holds 100,000 other live locks, against a service
 * holding 1,000, each alone in a child process (so neither shares the
 * other's heap), windows interleaved in one run. Issue 25's target: the
 * large fleet at least 0.8 of the small one.
 *
 * With `--cli` each service is `leasehold serve` as a user runs it (the built
 * dist/: run `npm run build` after an edit), with its defaults, e.g. its idle
 * collection, which runs in the gaps while the other service is measured.
 *
 *   npx tsx bench/held-fleet.ts [--small 1000] [--large 100000] [--duration-ms 4000]
 *                               [--warmup-ms 1000] [--concurrency 1,64] [--repeats 3] [--cli] [--json]
 */
import { randomUUID } from "node:crypto";
import { leaseholdPair, nameChooser } from "./locks.ts";
import { acquireHeld, firstAnswer, rssMb, spawnService, stopService, type ServiceChild } from "./service-process.ts";
import {
  alternate,
  closedLoop,
  markdownTable,
  median,
  parseBenchArgs,
  positiveInt,
  printJson,
  round,
  runBench,
  windowLine,
  withBench,
} from "./support.ts";

/** How long the held leases live: past any run. */
const HELD_TTL_MS = 3_600_000;
/** The pairs' own leases (released at once). */
const PAIR_TTL_MS = 10_000;

async function main(): Promise<void> {
  const { values, common } = parseBenchArgs(
    "usage: npx tsx bench/held-fleet.ts [--small 1000] [--large 100000] [--duration-ms N] [--warmup-ms N] [--concurrency 1,64] [--repeats N] [--cli] [--json]",
    { small: { type: "string", default: "1000" }, large: { type: "string", default: "100000" }, cli: { type: "boolean", default: false } },
  );
  const fleets = { small: positiveInt("small", values.small), large: positiveInt("large", values.large) };
  await withBench({ noAsyncTraces: true }, async (bench) => {
    const load = await bench.connect("bench-load");
    const services: Record<"small" | "large", { prefix: string; child: ServiceChild }> = {
      small: { prefix: `${bench.prefix}s`, child: spawnService(bench.nats.url, `${bench.prefix}s`, HELD_TTL_MS, values.cli) },
      large: { prefix: `${bench.prefix}l`, child: spawnService(bench.nats.url, `${bench.prefix}l`, HELD_TTL_MS, values.cli) },
    };
    try {
      for (const [fleet, { prefix, child }] of Object.entries(services)) {
        await firstAnswer(load, `${prefix}.v1.lock.get`, { name: "x" }, performance.now(), child.child);
        const held = fleets[fleet as keyof typeof fleets];
        const failed = await acquireHeld(load, prefix, held, HELD_TTL_MS, (line) => bench.progress(line));
        bench.progress(`${fleet}: holds ${held - failed} locks (${failed} failed), RSS ${rssMb(child.child.pid!)} MB`);
      }
      const runs: { fleet: string; repeat: number; concurrency: number; pairsPerSec: number; p50Ms: number; p99Ms: number }[] = [];
      for (let repeat = 1; repeat <= common.repeats; repeat++) {
        for (const concurrency of common.concurrency) {
          for (const fleet of alternate(["small", "large"] as const, repeat)) {
            const chooser = nameChooser(`${randomUUID().slice(0, 6)}r${repeat}c${concurrency}`, "cold", concurrency);
            const w = await closedLoop(leaseholdPair(load, services[fleet].prefix, chooser, PAIR_TTL_MS), concurrency, common, bench.nats);
            runs.push({ fleet, repeat, concurrency, pairsPerSec: w.completed / w.seconds, p50Ms: w.p50Ms, p99Ms: w.p99Ms });
            bench.progress(
              `repeat ${repeat} in-flight ${concurrency} ${fleet}: ${round(w.completed / w.seconds)} pairs/s, ${windowLine(w)}, failed ${w.failedRequests}`,
            );
          }
        }
      }
      const rows = common.concurrency.map((concurrency) => {
        const of = (fleet: string) => runs.filter((r) => r.fleet === fleet && r.concurrency === concurrency);
        const ratios = of("large").map((l) => l.pairsPerSec / of("small").find((s) => s.repeat === l.repeat)!.pairsPerSec);
        return {
          concurrency,
          smallPairsPerSec: round(median(of("small").map((r) => r.pairsPerSec))),
          largePairsPerSec: round(median(of("large").map((r) => r.pairsPerSec))),
          ratio: round(median(ratios), 2),
          ratioMin: round(Math.min(...ratios), 2),
          ratioMax: round(Math.max(...ratios), 2),
        };
      });
      const rss = { smallMb: rssMb(services.small.child.child.pid!), largeMb: rssMb(services.large.child.child.pid!) };
      if (values.json) printJson({ fleets, settings: common, machine: bench.machine, rows, rss, runs });
      else
        process.stdout.write(
          `${markdownTable(
            ["in flight", `${fleets.small} held pairs/s`, `${fleets.large} held pairs/s`, "ratio (median, min–max)"],
            rows.map((r) => [r.concurrency, r.smallPairsPerSec, r.largePairsPerSec, `${r.ratio} (${r.ratioMin}–${r.ratioMax})`]),
          )}\nRSS: ${rss.smallMb} MB holding ${fleets.small}, ${rss.largeMb} MB holding ${fleets.large}\n`,
        );
    } finally {
      for (const { child } of Object.values(services)) await stopService(child);
    }
  });
}

runBench(main);
