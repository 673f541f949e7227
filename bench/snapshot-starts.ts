/**
 * Starts from snapshots, interleaved across checkouts: each tree (a checkout
 * with its own built dist/) runs `leasehold serve` (its bin/leasehold.js)
 * over the store bench/restart.ts keeps, in turn, `--rounds` times (the order
 * reversed every other round); for each start, spawn → `host.list`
 * answering, and the child's CPU (user + system, from /proc) at that moment,
 * which moves much less with the machine's load than the wall time does.
 *
 *   npx tsx bench/snapshot-starts.ts --trees DIR[@STORE][,DIR[@STORE]...] [--rounds 5] [--data-dir DIR] [--json]
 *
 * STORE: that tree's own store (default `--data-dir`, bench/restart.ts's
 * default): a snapshot of another fold version is no use to the other trees.
 * A store must hold the stream and the snapshots a first start saved: run
 * `npx tsx bench/restart.ts --parts ready --repeats 1 --cli --data-dir STORE`
 * from that tree first. Each start is stopped by SIGTERM once it answered.
 */
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { startLocalNatsServer, type LocalNatsCluster } from "../src/cluster/local-cluster.ts";
import {
  json,
  machineInfo,
  markdownTable,
  median,
  parseOwnArgs,
  positiveInt,
  printJson,
  processCpuSeconds,
  round,
  runBench,
  succeeded,
  UsageError,
  waitForQuietMachine,
} from "./support.ts";

/** The prefix bench/restart.ts writes its stream under. */
const PREFIX = "rbench2";
/** A start that has not answered by then is reported as failed. */
const START_TIMEOUT_MS = 120_000;

interface Tree {
  readonly dir: string;
  readonly store: string;
}

interface Start {
  readonly tree: string;
  readonly round: number;
  readonly readyMs: number;
  readonly cpuMs: number;
  /** Whether the service logged a projection restored from a snapshot (else it folded the stream: not a start from snapshots). */
  readonly restored: boolean;
}

function parseSettings(): { trees: Tree[]; rounds: number; json: boolean } {
  const values = parseOwnArgs(
    "usage: npx tsx bench/snapshot-starts.ts --trees DIR[@STORE][,DIR[@STORE]...] [--rounds 5] [--data-dir DIR] [--json]",
    {
      trees: { type: "string" },
      rounds: { type: "string", default: "5" },
      "data-dir": { type: "string", default: join(tmpdir(), "leasehold-bench-restart") },
      json: { type: "boolean", default: false },
    },
  );
  if (values.trees === undefined) throw new UsageError("--trees names the checkouts to start, comma-separated");
  const trees = values.trees.split(",").map((spec) => {
    const [dir, store] = spec.split("@");
    return { dir: resolve(dir!), store: resolve(store ?? values["data-dir"]) };
  });
  return { trees, rounds: positiveInt("rounds", values.rounds), json: values.json };
}

/** One `leasehold serve` of `tree` on `url`: spawn → host.list answering, and its CPU then. */
async function startOnce(tree: Tree, url: string, nc: NatsConnection, round: number): Promise<Start> {
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [join(tree.dir, "bin/leasehold.js"), "serve", "--nats", url, "--prefix", PREFIX, "--max-ttl-ms", "30000"],
    {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LEASEHOLD_LOG_LEVEL: "info", LEASEHOLD_LOG_FORMAT: "json" },
    },
  );
  // The last of what it printed (for a failure's message), and whether it said it restored a snapshot.
  let log = "";
  let restored = false;
  const take = (c: Buffer) => {
    log = (log + c.toString()).slice(-100_000);
    restored ||= log.includes("restored from a snapshot");
  };
  child.stdout.on("data", take);
  child.stderr.on("data", take);
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${tree.dir}: serve exited (${child.exitCode}) before answering: ${log.slice(-600)}`);
      if (performance.now() - t0 > START_TIMEOUT_MS) throw new Error(`${tree.dir}: host.list not answered in ${START_TIMEOUT_MS} ms`);
      const reply = await nc.request(`${PREFIX}.v1.host.list`, json({}), { timeout: 1000 }).catch(() => undefined);
      if (reply !== undefined && succeeded(reply)) {
        const readyMs = performance.now() - t0;
        const cpuMs = (processCpuSeconds(child.pid!) ?? Number.NaN) * 1000;
        return {
          tree: tree.dir,
          round,
          readyMs: round0(readyMs),
          cpuMs: round0(cpuMs),
          restored,
        };
      }
      await sleep(5);
    }
  } finally {
    const exited = new Promise((r) => child.once("exit", r));
    if (child.exitCode === null) child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(timer);
  }
}

const round0 = (v: number) => round(v, 0);

async function main(): Promise<void> {
  const settings = parseSettings();
  const quiet = await waitForQuietMachine((line) => process.stderr.write(`${line}\n`));
  const servers = new Map<string, { server: LocalNatsCluster; nc: NatsConnection }>();
  try {
    for (const store of new Set(settings.trees.map((t) => t.store))) {
      const server = await startLocalNatsServer({ dir: store });
      servers.set(store, { server, nc: await connect({ servers: server.urls[0]!, noAsyncTraces: true }) });
    }
    const starts: Start[] = [];
    for (let r = 1; r <= settings.rounds; r++) {
      for (const tree of r % 2 === 1 ? settings.trees : [...settings.trees].reverse()) {
        const { server, nc } = servers.get(tree.store)!;
        const start = await startOnce(tree, server.urls[0]!, nc, r);
        starts.push(start);
        process.stderr.write(
          `${tree.dir} round ${r}: ready ${start.readyMs} ms, CPU ${start.cpuMs} ms${start.restored ? "" : " (NOT from a snapshot)"}\n`,
        );
      }
    }
    const machine = machineInfo(servers.values().next().value?.nc.info?.version ?? "unknown");
    const summary = settings.trees.map((tree) => {
      const mine = starts.filter((s) => s.tree === tree.dir);
      const ready = mine.map((s) => s.readyMs);
      const cpu = mine.map((s) => s.cpuMs);
      return {
        tree: tree.dir,
        store: tree.store,
        runs: mine.length,
        fromSnapshot: mine.filter((s) => s.restored).length,
        readyMs: { median: median(ready), low: Math.min(...ready), high: Math.max(...ready), each: ready },
        cpuMs: { median: median(cpu), low: Math.min(...cpu), high: Math.max(...cpu), each: cpu },
      };
    });
    if (settings.json) {
      printJson({ settings, machine, quiet, summary, starts });
      return;
    }
    process.stdout.write(
      [
        `node ${process.version}, load at start ${quiet.load1m}`,
        "",
        markdownTable(
          ["tree", "runs (from a snapshot)", "spawn → host.list ms, median (low–high)", "CPU ms at host.list, median (low–high)"],
          summary.map((s) => [
            s.tree,
            `${s.runs} (${s.fromSnapshot})`,
            `${s.readyMs.median} (${s.readyMs.low}–${s.readyMs.high})`,
            `${s.cpuMs.median} (${s.cpuMs.low}–${s.cpuMs.high})`,
          ]),
        ),
        "",
      ].join("\n"),
    );
  } finally {
    for (const { server, nc } of servers.values()) {
      await nc.drain().catch(() => undefined);
      await server.stop();
    }
  }
}

runBench(main);
