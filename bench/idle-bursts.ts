/**
 * Lock pairs in bursts with idle gaps between them, on `leasehold serve` as a
 * user runs it (the built dist/: run `npm run build` after an edit): pairs/s
 * of each burst, and the idle collections the service logged in the gaps
 * (heap MB before → after, pause). Run it alternating with
 * `LEASEHOLD_IDLE_COLLECT_MS=0` to see what the idle collection costs the
 * burst after it (docs/operations.md, "Memory").
 *
 *   npx tsx bench/idle-bursts.ts [--bursts 8] [--burst-ms 2000] [--gap-ms 4000] [--in-flight 64] [--json]
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { leaseholdPair, nameChooser } from "./locks.ts";
import { firstAnswer, spawnService, stopService } from "./service-process.ts";
import { closedLoop, parseOwnArgs, positiveInt, printJson, round, runBench, withBench } from "./support.ts";

/** Long enough for any lease the bursts take (each is released at once). */
const MAX_TTL_MS = 600_000;

async function main(): Promise<void> {
  const values = parseOwnArgs(
    "usage: npx tsx bench/idle-bursts.ts [--bursts 8] [--burst-ms 2000] [--gap-ms 4000] [--in-flight 64] [--json]",
    {
      bursts: { type: "string", default: "8" },
      "burst-ms": { type: "string", default: "2000" },
      "gap-ms": { type: "string", default: "4000" },
      "in-flight": { type: "string", default: "64" },
      json: { type: "boolean", default: false },
    },
  );
  const bursts = positiveInt("bursts", values.bursts);
  const burstMs = positiveInt("burst-ms", values["burst-ms"]);
  const gapMs = positiveInt("gap-ms", values["gap-ms"]);
  const inFlight = positiveInt("in-flight", values["in-flight"]);
  await withBench({ noAsyncTraces: true }, async (bench) => {
    const nc = await bench.connect("idle-bursts");
    const prefix = `${bench.prefix}b`;
    // At info, so that its idle collections can be counted.
    const service = spawnService(bench.nats.url, prefix, MAX_TTL_MS, true, "info");
    try {
      await firstAnswer(nc, `${prefix}.v1.lock.get`, { name: "x" }, performance.now(), service.child);
      const rates: number[] = [];
      for (let b = 0; b < bursts; b++) {
        const chooser = nameChooser(`${randomUUID().slice(0, 6)}b${b}`, "cold", inFlight);
        const w = await closedLoop(leaseholdPair(nc, prefix, chooser, 10_000), inFlight, { warmupMs: 0, durationMs: burstMs }, bench.nats);
        rates.push(round(w.completed / w.seconds));
        bench.progress(`burst ${b + 1}: ${round(w.completed / w.seconds)} pairs/s`);
        if (b < bursts - 1) await sleep(gapMs);
      }
      const collections = service.lines
        .filter((l) => typeof l.msg === "string" && l.msg.startsWith("idle: heap collected"))
        .map((l) => ({ heapMbBefore: l.heapMbBefore, heapMbAfter: l.heapMbAfter, pauseMs: l.pauseMs }));
      const setting = process.env.LEASEHOLD_IDLE_COLLECT_MS ?? "default";
      if (values.json) printJson({ setting, bursts, burstMs, gapMs, inFlight, pairsPerSec: rates, collections });
      else {
        const done = collections.map((c) => `${String(c.heapMbBefore)}→${String(c.heapMbAfter)} MB in ${String(c.pauseMs)} ms`);
        process.stdout.write(
          `idle collection ${setting}: pairs/s per burst ${rates.join(", ")}; collections: ${done.join(", ") || "none"}\n`,
        );
      }
      await stopService(service);
    } finally {
      if (service.child.exitCode === null) service.child.kill("SIGKILL");
    }
  });
}

runBench(main);
