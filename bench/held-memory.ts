/**
 * Memory per held lock: a fresh service in a child process acquires
 * `--held` locks (default 100,000, ten minutes' TTL); its RSS is read from
 * /proc when it has started, right after the last acquire, and ten seconds
 * later, without forcing a GC, and the KB per held lock over the empty
 * service are printed (docs/performance.md).
 *
 * With `--cli` the service is `leasehold serve` as a user runs it (the
 * built dist/: run `npm run build` after an edit), else bench/restart-service.ts
 * through tsx.
 *
 * `--later-s 30,60` also reads the RSS that many seconds after the last
 * acquire (V8 gives memory back only once it has been idle a while).
 *
 * `LEASEHOLD_BENCH_SERVICE_NODE_ARGS="--max-semi-space-size=8 --heap-growing-percent=20"`
 * runs the service under those Node flags (docs/operations.md, "Memory").
 *
 *   npx tsx bench/held-memory.ts [--held 100000] [--cli] [--later-s 30,60] [--json]
 */
import { heldLocksMemory } from "./service-process.ts";
import { markdownTable, parseOwnArgs, positiveInt, printJson, runBench, startBenchNats, waitForQuietMachine } from "./support.ts";
import { connect } from "@nats-io/transport-node";

async function main(): Promise<void> {
  const values = parseOwnArgs("usage: npx tsx bench/held-memory.ts [--held 100000] [--cli] [--later-s 30,60] [--json]", {
    held: { type: "string", default: "100000" },
    cli: { type: "boolean", default: false },
    "later-s": { type: "string", default: "" },
    json: { type: "boolean", default: false },
  });
  const held = positiveInt("held", values.held);
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  const quiet = await waitForQuietMachine(progress);
  const nats = await startBenchNats();
  const nc = await connect({ servers: nats.url, name: "held-memory-bench", noAsyncTraces: true });
  try {
    const laterS = values["later-s"] === "" ? [] : values["later-s"].split(",").map((s) => positiveInt("later-s", s));
    const memory = await heldLocksMemory(nc, nats.url, held, progress, values.cli, laterS);
    if (values.json) printJson({ quiet, natsServer: nats.version, cli: values.cli, ...memory });
    else
      process.stdout.write(
        `${markdownTable(
          [
            "held",
            "failed",
            "RSS empty MB",
            "RSS after last acquire MB",
            "RSS 10 s later MB",
            ...memory.rssLaterMb.map((r) => `RSS ${r.afterS} s later MB`),
            "KB per held lock",
          ],
          [
            [
              memory.held,
              memory.failed,
              memory.rssEmptyMb,
              memory.rssHeldMb,
              memory.rssHeld10sMb,
              ...memory.rssLaterMb.map((r) => r.mb),
              memory.kbPerHeldLock,
            ],
          ],
        )}\n(load ${quiet.load1m} at start)\n`,
      );
  } finally {
    await nc.drain().catch(() => undefined);
    await nats.stop();
  }
}

runBench(main);
