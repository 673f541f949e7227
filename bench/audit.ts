/**
 * Audit benchmark: a clean history of N events (default 100,000) from the
 * simulated workload of test/tools/support/workload.ts (every kind, through
 * the real deciders on the in-memory log) is written into a JetStream stream
 * on a private nats-server; then the audit reads it back from JetStream and
 * checks it, timed three ways: the library (`auditStream` over the
 * JetStream log), and the `leasehold audit` command end to end (process
 * start, connect, read, check, print), each `--repeats` times; medians
 * reported.
 *
 *   npx tsx bench/audit.ts [--events 100000] [--repeats 3] [--seed 7] [--json]
 */
import { parseArgs } from "node:util";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { JetStreamEventLog } from "../src/events/jetstream-event-log.ts";
import { Subjects } from "../src/contract/subjects.ts";
import { auditStream } from "../src/tools/audit.ts";
import { simulateWorkload } from "../test/tools/support/workload.ts";
import { machineInfo, markdownTable, median, round, startBenchNats } from "./support.ts";

const { values } = parseArgs({
  options: {
    events: { type: "string", default: "100000" },
    repeats: { type: "string", default: "3" },
    seed: { type: "string", default: "7" },
    json: { type: "boolean", default: false },
  },
});
const events = Number(values.events);
const repeats = Number(values.repeats);
const BIN = fileURLToPath(new URL("../bin/leasehold.js", import.meta.url));

const nats = await startBenchNats();
try {
  const machine = machineInfo(nats.version);
  const generatedAt = Date.now();
  const sim = await simulateWorkload({ events, seed: Number(values.seed) });
  const generateMs = Date.now() - generatedAt;

  const prefix = "bench";
  const subjects = new Subjects(prefix);
  const nc = await connect({ servers: nats.url, name: "bench-audit" });
  const log = await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
  const js = jetstream(nc);
  const from = `${sim.subjects.prefix}.events.`;
  const publishedAt = Date.now();
  let pending: Promise<unknown>[] = [];
  for (const m of sim.log.messages.slice(0, events)) {
    pending.push(js.publish(`${prefix}.events.${m.subject.slice(from.length)}`, m.payload));
    if (pending.length >= 500) {
      await Promise.all(pending);
      pending = [];
    }
  }
  await Promise.all(pending);
  const publishMs = Date.now() - publishedAt;

  const library: number[] = [];
  const command: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const summary = await auditStream(log.readStream(), subjects, { cooldownMs: sim.config.cooldownMs, maxTtlMs: sim.config.maxTtlMs });
    if (summary.violations !== 0 || summary.read !== events) throw new Error(`unexpected audit result: ${JSON.stringify(summary)}`);
    library.push(summary.elapsedMs);

    const started = Date.now();
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(
        process.execPath,
        [BIN, "audit", "--nats", nats.url, "--prefix", prefix, "--cooldown-ms", String(sim.config.cooldownMs)],
        {
          stdio: ["ignore", "ignore", "inherit"],
        },
      );
      child.once("exit", resolve);
    });
    if (code !== 0) throw new Error(`leasehold audit exited ${code}`);
    command.push(Date.now() - started);
  }
  await nc.close();

  const result = {
    machine,
    events,
    generateMs,
    publishMs,
    libraryMs: median(library),
    commandMs: median(command),
    libraryEventsPerSecond: round(events / (median(library) / 1000)),
    commandEventsPerSecond: round(events / (median(command) / 1000)),
  };
  if (values.json) {
    console.log(JSON.stringify(result, null, 2));
  } else {
    console.log(`${machine.cpuModel}, ${machine.cores} cores, node ${machine.node}, nats-server ${machine.natsServer}`);
    console.log(`${events} simulated events: generated in ${generateMs} ms, written into JetStream in ${publishMs} ms\n`);
    console.log(
      markdownTable(
        ["audit of the JetStream stream", "median of " + repeats, "events/s"],
        [
          [
            "library (auditStream over JetStreamEventLog.readStream)",
            `${round(result.libraryMs / 1000, 2)} s`,
            result.libraryEventsPerSecond,
          ],
          ["`leasehold audit` command, end to end", `${round(result.commandMs / 1000, 2)} s`, result.commandEventsPerSecond],
        ],
      ),
    );
  }
} finally {
  await nats.stop();
}
