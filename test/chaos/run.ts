/**
 * `npm run chaos`: one chaos run on real processes (see scenario.ts), its
 * figures printed and optionally written as JSON; exit 0 when every check
 * held, 1 when one did not, 2 on a usage error.
 */
import { writeFileSync } from "node:fs";
import { Command, InvalidArgumentError, Option } from "commander";
import { DEFAULT_CLOCK_SKEW_MARGIN_MS } from "../../src/client/index.ts";
import { CHAOS_CHECKS } from "./checks.ts";
import { runPartition } from "./partition.ts";
import { runChaos, type ChaosReport } from "./scenario.ts";
import { runSkew } from "./skew.ts";

const integer = (min: number) => (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`an integer >= ${min}`);
  return n;
};

const program = new Command()
  .name("npm run chaos --")
  .description(
    "Chaos run on real processes: nats-server (or a three-node cluster), two `leasehold serve` instances, many clients on locks, proxies and routes " +
      "(retries by requestId). During the run it SIGKILLs an instance and restarts it, SIGKILLs nats-server (or the event stream's leader node) and " +
      "restarts it, and SIGTERMs the other instance; then a fresh instance must answer as the survivor did, and the records and the stream are checked.",
  )
  .option("--cluster", "run on a three-node JetStream cluster (streams at three replicas)")
  .addOption(
    new Option(
      "--partition",
      "instead: a three-node cluster with one node in its own network namespace (needs root), an instance and a quarter of the clients on it; " +
        "its routes are cut from 25 % to 65 % of the run; the minority must answer only UNAVAILABLE or reads, and serve within 5 s of the heal",
    ).conflicts("cluster"),
  )
  .addOption(
    new Option(
      "--skew <ms>",
      "instead: one nats-server and two instances, the second with its clock <ms> ahead; counts overlapping holds as clients with true clocks see them",
    )
      .argParser(integer(1))
      .conflicts(["cluster", "partition"]),
  )
  .addOption(
    new Option(
      "--holder-margin <ms>",
      "with --skew: the holders count on a lease as the lock keeper does, from the request's send for its TTL less this margin (at most a quarter of the TTL)",
    )
      .argParser(integer(0))
      .default(DEFAULT_CLOCK_SKEW_MARGIN_MS),
  )
  .addOption(
    new Option("--seed <n>", "seed of the workload and fault timing (a run prints its seed; pass it to replay)").argParser(integer(0)),
  )
  .addOption(new Option("--duration <seconds>", "length of the loaded part").argParser(integer(10)).default(30))
  .addOption(new Option("--clients <n>", "concurrent clients").argParser(integer(1)).default(16))
  .option("--json <file>", "write the figures as JSON: {requests, faults, violations: {<check>: count}, ...}")
  .addHelpText(
    "after",
    `\nChecks (each reported, 0 when it held):\n${Object.entries(CHAOS_CHECKS)
      .map(([k, v]) => `  ${k}: ${v}`)
      .join("\n")}\n`,
  )
  .showHelpAfterError();

program.parse();
const flags = program.opts<{
  cluster?: boolean;
  partition?: boolean;
  skew?: number;
  holderMargin: number;
  seed?: number;
  duration: number;
  clients: number;
  json?: string;
}>();
const seed = flags.seed ?? Math.floor(Math.random() * 2 ** 31);

const common = { seed, durationMs: flags.duration * 1000, clients: flags.clients, log: (line: string) => console.log(`chaos: ${line}`) };
const report: ChaosReport =
  flags.skew !== undefined
    ? await runSkew({ ...common, skewMs: flags.skew, holderMarginMs: flags.holderMargin })
    : flags.partition === true
      ? await runPartition(common)
      : await runChaos({ ...common, cluster: flags.cluster === true });

console.log(
  `\nchaos ${report.passed ? "PASSED" : "FAILED"} (seed ${report.seed}${flags.skew !== undefined ? `, skew ${flags.skew} ms, holder margin ${flags.holderMargin} ms` : flags.partition === true ? ", partition" : report.cluster ? ", cluster" : ""}): ${report.requests} requests ` +
    `(${report.attempts} attempts), ${report.events} events, ${report.lockOperations} lock operations checked for linearizability, ${report.faults.length} faults, longest unavailability seen by a client ${report.longestUnavailableMs} ms, ` +
    `unserved attempts outside fault windows ${report.unservedOutsideFaults} ${JSON.stringify(report.unservedBreakdown)}`,
);
for (const f of report.faults)
  console.log(
    `  fault: ${f.fault} ${f.target} at ${f.atMs} ms${f.tookMs === undefined ? "" : ` (${f.tookMs} ms)`}${f.exitCode === undefined ? "" : ` exit ${f.exitCode}`}`,
  );
if (report.minorityAnswers !== undefined) console.log(`  minority answers during the partition: ${JSON.stringify(report.minorityAnswers)}`);
const notJudged: readonly string[] = report.notJudged ?? [];
for (const [check, count] of Object.entries(report.violations)) {
  const judged = !notJudged.includes(check);
  console.log(
    `  ${count === 0 ? "ok  " : judged ? "FAIL" : "n/a "} ${check}: ${count}${judged ? "" : " (reported, not judged by this run)"}`,
  );
  for (const example of report.examples[check as keyof typeof report.examples] ?? []) console.log(`         ${example.split("\n")[0]}`);
}
if (flags.json !== undefined) writeFileSync(flags.json, JSON.stringify(report, null, 2) + "\n");
process.exit(report.passed ? 0 : 1);
