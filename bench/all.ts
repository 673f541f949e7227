/**
 * `npm run bench`: every throughput benchmark, one after the other, each in
 * its own process (each waits for a quiet machine and keeps to a few
 * minutes), gathered into one table — locks (cold and hot names), proxies
 * (10 and 1,000), routes (8 and 1,000 hosts; reuse and new placement), at 1
 * and 64 in flight, each against its same-run one-publish ceiling — plus the
 * fleet-size ratios, and lock pairs on a service holding 100,000 live locks
 * against one holding 1,000 (bench/held-fleet.ts), and sessions (bench/sessions.ts:
 * 1,000 locks kept by one session against 1,000 lock keepers, and a worker's
 * SIGKILL, in tables of their own). The whole result is saved as JSON in bench/results/ and
 * the table replaces the "Latest `npm run bench`" section of bench/README.md.
 *
 *   npx tsx bench/all.ts [--label after] [--only locks,proxies,routes,fleet,sessions]
 *                        [--results-dir bench/results] [--no-readme]
 *                        [-- <options passed to every bench, e.g. --repeats 1>]
 */
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { markdownTable, round, runBench, UsageError } from "./support.ts";
import { sessionTables, type SessionCost, type SessionKill } from "./session-report.ts";

const BENCH_DIR = fileURLToPath(new URL(".", import.meta.url));

/** One row of the table: a workload at one fleet size and concurrency. */
export interface BenchRow {
  readonly workload: string;
  readonly fleet: string;
  readonly inFlight: number;
  readonly unit: string;
  readonly leasehold: number;
  readonly ceiling: number;
  readonly ratio: number | undefined;
  readonly leaseholdP50Ms: number;
  readonly ceilingP50Ms: number;
  readonly p50Ratio: number | undefined;
  readonly failed: number;
}

interface Step {
  readonly name: "locks" | "proxies" | "routes" | "fleet" | "sessions";
  readonly args: readonly string[];
  readonly rows: (out: Record<string, unknown>) => BenchRow[];
  /** Tables of its own, for a bench whose figures are not throughput against a ceiling. */
  readonly tables?: (out: Record<string, unknown>) => string;
}

type Num = number | null | undefined;

/** The workload of bench/held-fleet.ts: lock pairs beside many live locks (issue 25's target: 100,000 held at least 0.8 of 1,000). */
const HELD_WORKLOAD = "lock acquire+release beside held locks";
const num = (v: Num): number => (v === null || v === undefined ? Number.NaN : v);

const locks: Step = {
  name: "locks",
  args: ["locks.ts", "--names", "cold,hot"],
  rows: (out) =>
    (
      out.summaries as {
        names: string;
        concurrency: number;
        leasehold?: { pairsPerSec: number; p50Ms: number };
        ceiling?: { pairsPerSec: number; p50Ms: number };
        ratio?: number;
        p50Ratio?: number;
      }[]
    ).map((s) => ({
      workload: "lock acquire+release",
      fleet: s.names === "cold" ? "10,000 names" : "64 names",
      inFlight: s.concurrency,
      unit: "pairs/s",
      leasehold: num(s.leasehold?.pairsPerSec),
      ceiling: num(s.ceiling?.pairsPerSec),
      ratio: s.ratio,
      leaseholdP50Ms: num(s.leasehold?.p50Ms),
      ceilingP50Ms: num(s.ceiling?.p50Ms),
      p50Ratio: s.p50Ratio,
      failed: 0,
    })),
};

const proxyRows =
  (fleet: string) =>
  (out: Record<string, unknown>): BenchRow[] =>
    (
      out.rows as {
        concurrency: number;
        leasehold: number;
        leaseholdP50: number;
        ceiling: number;
        ceilingP50: number;
        ratio?: number;
        p50Ratio?: number;
        failed: number;
      }[]
    ).map((r) => ({
      workload: "proxy acquire+release",
      fleet,
      inFlight: r.concurrency,
      unit: "pairs/s",
      leasehold: r.leasehold,
      ceiling: r.ceiling,
      ratio: r.ratio,
      leaseholdP50Ms: r.leaseholdP50,
      ceilingP50Ms: r.ceilingP50,
      p50Ratio: r.p50Ratio,
      failed: r.failed,
    }));

const routeRows =
  (fleet: string) =>
  (out: Record<string, unknown>): BenchRow[] =>
    (
      out.rows as {
        path: string;
        concurrency: number;
        leasehold: number;
        leaseholdP50: number;
        ceiling: number;
        ceilingP50: number;
        ratio: number;
        p50Ratio?: number;
        failed: number;
      }[]
    ).map((r) => ({
      workload: `route acquire (${r.path === "reuse" ? "reuse" : "new placement"})`,
      fleet,
      inFlight: r.concurrency,
      unit: "req/s",
      leasehold: r.leasehold,
      ceiling: r.ceiling,
      ratio: r.ratio,
      leaseholdP50Ms: r.leaseholdP50,
      ceilingP50Ms: r.ceilingP50,
      p50Ratio: r.p50Ratio,
      failed: r.failed,
    }));

/** The fleet label of a held-lock count ("100,000 held"). */
const held = (n: number) => `${n.toLocaleString("en-US")} held`;

const heldFleet: Step = {
  name: "fleet",
  args: ["held-fleet.ts"],
  rows: (out) => {
    const fleets = out.fleets as { small: number; large: number };
    return (out.rows as { concurrency: number; smallPairsPerSec: number; largePairsPerSec: number }[]).flatMap((r) =>
      (
        [
          [fleets.small, r.smallPairsPerSec],
          [fleets.large, r.largePairsPerSec],
        ] as const
      ).map(([n, pairsPerSec]) => ({
        workload: HELD_WORKLOAD,
        fleet: held(n),
        inFlight: r.concurrency,
        unit: "pairs/s",
        leasehold: pairsPerSec,
        ceiling: Number.NaN,
        ratio: undefined,
        leaseholdP50Ms: Number.NaN,
        ceilingP50Ms: Number.NaN,
        p50Ratio: undefined,
        failed: 0,
      })),
    );
  },
};

const sessions: Step = {
  name: "sessions",
  args: ["sessions.ts"],
  rows: () => [],
  tables: (out) => sessionTables(out.settings as { locks: number; ttlMs: number }, out.cost as SessionCost, out.kills as SessionKill[]),
};

const STEPS: readonly Step[] = [
  locks,
  { name: "proxies", args: ["proxies.ts", "--proxies", "10"], rows: proxyRows("10 proxies") },
  { name: "proxies", args: ["proxies.ts", "--proxies", "1000"], rows: proxyRows("1,000 proxies") },
  { name: "routes", args: ["routes.ts", "--hosts", "8"], rows: routeRows("8 hosts") },
  { name: "routes", args: ["routes.ts", "--hosts", "1000"], rows: routeRows("1,000 hosts") },
  heldFleet,
  sessions,
];

/** Runs one bench with `--json`, passing its progress through; resolves with its parsed output. */
function runStep(step: Step, extra: readonly string[]): Promise<Record<string, unknown>> {
  const args = ["--import", "tsx", join(BENCH_DIR, step.args[0]!), ...step.args.slice(1), ...extra, "--json"];
  process.stderr.write(`\n== node ${args.slice(2).join(" ")}\n`);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
    let stdout = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.once("exit", (code) => {
      if (code !== 0) return reject(new Error(`${step.args.join(" ")} exited with ${code}`));
      try {
        resolve(JSON.parse(stdout) as Record<string, unknown>);
      } catch (e) {
        reject(new Error(`${step.args.join(" ")} printed no JSON: ${(e as Error).message}`));
      }
    });
  });
}

/** The leasehold throughput of a row, for fleet-size ratios. */
function rate(rows: readonly BenchRow[], workload: string, fleet: string, inFlight: number): number | undefined {
  return rows.find((r) => r.workload === workload && r.fleet === fleet && r.inFlight === inFlight)?.leasehold;
}

/** leasehold at the large fleet over leasehold at the small one (issue 12's target: at least 0.8). */
export function fleetRatios(rows: readonly BenchRow[]): { workload: string; inFlight: number; ratio: number | undefined }[] {
  const pairs: [string, string, string][] = [
    ["proxy acquire+release", "1,000 proxies", "10 proxies"],
    ["route acquire (reuse)", "1,000 hosts", "8 hosts"],
    ["route acquire (new placement)", "1,000 hosts", "8 hosts"],
    [HELD_WORKLOAD, held(100_000), held(1000)],
  ];
  return pairs.flatMap(([workload, large, small]) =>
    [1, 64].map((inFlight) => {
      const a = rate(rows, workload, large, inFlight);
      const b = rate(rows, workload, small, inFlight);
      return {
        workload: `${workload}: ${large} / ${small}`,
        inFlight,
        ratio: a === undefined || b === undefined ? undefined : round(a / b, 2),
      };
    }),
  );
}

/** The table of one `npm run bench` result. */
export function benchTable(rows: readonly BenchRow[]): string {
  const f = (v: number | undefined, digits = 0) => (v === undefined || Number.isNaN(v) ? "–" : String(round(v, digits)));
  return [
    markdownTable(
      ["workload", "fleet", "in flight", "leasehold", "ceiling", "ratio", "p50 ms leasehold / ceiling", "p50 ratio", "failed"],
      rows.map((r) => [
        r.workload,
        r.fleet,
        r.inFlight,
        `${f(r.leasehold)} ${r.unit}`,
        `${f(r.ceiling)} ${r.unit}`,
        f(r.ratio, 2),
        `${f(r.leaseholdP50Ms, 2)} / ${f(r.ceilingP50Ms, 2)}`,
        f(r.p50Ratio, 2),
        r.failed,
      ]),
    ),
    "",
    markdownTable(
      ["fleet-size ratio (leasehold)", "in flight", "ratio"],
      fleetRatios(rows).map((r) => [r.workload, r.inFlight, f(r.ratio, 2)]),
    ),
  ].join("\n");
}

const START = "<!-- npm run bench: latest table (written by bench/all.ts) -->";
const END = "<!-- end of the latest npm run bench table -->";

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        label: { type: "string", default: "after" },
        only: { type: "string", default: "locks,proxies,routes,fleet,sessions" },
        "results-dir": { type: "string", default: join(BENCH_DIR, "results") },
        "no-readme": { type: "boolean", default: false },
      },
      strict: true,
      allowPositionals: true,
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const { values, positionals } = parsed;
  const only = values.only.split(",").map((s) => s.trim());
  const started = new Date();
  const rows: BenchRow[] = [];
  const extraTables: string[] = [];
  const outputs: { step: readonly string[]; output: Record<string, unknown> }[] = [];
  for (const step of STEPS.filter((s) => only.includes(s.name))) {
    const output = await runStep(step, positionals);
    outputs.push({ step: step.args, output });
    rows.push(...step.rows(output));
    if (step.tables !== undefined) extraTables.push(step.tables(output));
  }
  const table = [benchTable(rows), ...extraTables].join("\n\n");
  mkdirSync(values["results-dir"], { recursive: true });
  const file = join(values["results-dir"], `bench-${values.label}-${started.toISOString().replaceAll(":", "-").slice(0, 19)}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ label: values.label, started: started.toISOString(), rows, fleetRatios: fleetRatios(rows), outputs }, null, 2)}\n`,
  );
  process.stdout.write(`${table}\n\nsaved ${file}\n`);
  if (!values["no-readme"]) {
    const readmePath = join(BENCH_DIR, "README.md");
    const readme = readFileSync(readmePath, "utf8");
    const machine = outputs[0]?.output.machine as
      { node?: string; natsServer?: string; cpuModel?: string; cores?: number; loadAvgAtStart?: number[] } | undefined;
    const section = [
      START,
      "",
      "## Latest `npm run bench`",
      "",
      `\`npm run bench\` (label ${values.label}), started ${started.toISOString()}; node ${machine?.node}, nats-server ${machine?.natsServer}, ${machine?.cpuModel} x ${machine?.cores}; load at start of the first bench ${machine?.loadAvgAtStart?.join(" ")}. Results: \`${file.slice(file.indexOf("bench/results"))}\`.`,
      "",
      table,
      "",
      END,
    ].join("\n");
    const at = readme.indexOf(START);
    const next =
      at >= 0
        ? readme.slice(0, at) + section + readme.slice(readme.indexOf(END) + END.length)
        : readme.replace(/\n## /, `\n${section}\n\n## `);
    writeFileSync(readmePath, next);
  }
}

runBench(main);
