/**
 * One chaos run: nats-server (or a three-node cluster), two `leasehold serve`
 * processes and many recording clients; during the run an instance is
 * SIGKILLed and restarted, nats-server (or the event stream's leader node) is
 * SIGKILLed and restarted, and the other instance gets SIGTERM. Afterwards a
 * fresh instance must answer as the survivor did, and the records and the
 * stream go through every check of checks.ts.
 */
import { randomUUID } from "node:crypto";
import { startLocalCluster, type LocalNatsCluster } from "../../src/cluster/local-cluster.ts";
import { CHAOS_CHECKS, checkRun, checkTimeouts, VerdictBuilder, type ChaosCheck } from "./checks.ts";
import type { Outage } from "./history.ts";
import { chaosReport } from "./report.ts";
import { ServeProcess } from "./serve-process.ts";
import { readWholeStream } from "./stream.ts";
import { Rng, Workload, type RecordingClient } from "./workload.ts";

/** Settings of a chaos run. */
export interface ChaosSettings {
  readonly cluster: boolean;
  readonly seed: number;
  /** Length of the loaded part of the run, ms (faults fall at fixed fractions of it, jittered by the seed). */
  readonly durationMs: number;
  readonly clients: number;
  /** Per-attempt deadline of the clients, ms. */
  readonly attemptMs?: number;
  /** Progress lines (the CLI prints them; tests stay quiet). */
  readonly log?: (line: string) => void;
}

/** One injected fault (or recovery), as the JSON report lists it. */
export interface FaultRecord {
  readonly fault: string;
  readonly target: string;
  /** ms since the start of the load. */
  readonly atMs: number;
  /** ms the target took to be back (restarts) or to exit (SIGTERM). */
  readonly tookMs?: number;
  readonly exitCode?: number | null;
}

/** What a chaos run found: `requests`, `faults` and `violations` are the JSON report's required fields. */
export interface ChaosReport {
  readonly requests: number;
  readonly faults: FaultRecord[];
  readonly violations: Record<ChaosCheck, number>;
  readonly seed: number;
  readonly cluster: boolean;
  readonly durationMs: number;
  readonly clients: number;
  readonly attempts: number;
  readonly longestUnavailableMs: number;
  /** Attempts outside the fault windows that got no answer in time. */
  readonly unservedOutsideFaults: number;
  /** Those attempts by outcome, command and second since the load began. */
  readonly unservedBreakdown: Record<string, number>;
  readonly events: number;
  readonly undecidedLocks: number;
  /** Lock operations the linearizability check covered. */
  readonly lockOperations: number;
  readonly examples: Partial<Record<ChaosCheck, string[]>>;
  /** True when every check held. */
  readonly passed: boolean;
  /** Checks counted but not judged by this kind of run (`passed` ignores them). */
  readonly notJudged?: readonly ChaosCheck[];
  /** Partition runs: what the minority side answered to requests sent during the partition, by outcome. */
  readonly minorityAnswers?: Record<string, number>;
}

const COOLDOWN_MS = 3000;
const MAX_TTL_MS = 30_000;
/** What the service is allowed after a fault before it must serve again. */
const RECOVERY_MS = 5000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the scenario; every process it started is gone when it resolves or throws. */
export async function runChaos(settings: ChaosSettings): Promise<ChaosReport> {
  const log = settings.log ?? (() => undefined);
  const rng = new Rng(settings.seed ^ 0x5eed);
  const prefix = `chaos${randomUUID().replaceAll("-", "").slice(0, 10)}`;
  const stream = `${prefix.toUpperCase()}_EVENTS`;
  const replicas = settings.cluster ? 3 : 1;
  const attemptMs = settings.attemptMs ?? 2000;
  const verdict = new VerdictBuilder();
  const faults: FaultRecord[] = [];
  const outages: Outage[] = [];
  const processes = new Set<ServeProcess>();
  let workload: Workload | undefined;
  let t0 = Date.now();
  const cluster: LocalNatsCluster = await startLocalCluster({ size: settings.cluster ? 3 : 1 });
  log(
    `nats: ${cluster.urls.join(",")} (${settings.cluster ? "three-node cluster, replicas 3" : "single node"}), prefix ${prefix}, seed ${settings.seed}`,
  );

  const start = async (name: string) => {
    const p = await startServe(cluster, name, prefix, replicas);
    processes.add(p);
    return p;
  };
  const terminate = async (p: ServeProcess, t0: number, what: string) => {
    const exit = await p.terminate(10_000);
    processes.delete(p);
    faults.push({ fault: what, target: p.name, atMs: Date.now() - exit.ms - t0, tookMs: exit.ms, exitCode: exit.code });
    if (exit.code !== 0 || exit.timedOut || exit.ms > 10_000) {
      verdict.add(
        "sigterm-exit",
        `${p.name}: code ${exit.code}, signal ${exit.signal}, ${exit.ms} ms${exit.timedOut ? " (SIGKILLed after 10 s)" : ""}\n${p.logTail.slice(-1500)}`,
      );
    }
    log(`SIGTERM ${p.name}: exit ${exit.code ?? exit.signal} after ${exit.ms} ms`);
  };

  try {
    let a = await start("A");
    const b = await start("B");
    workload = new Workload({
      prefix,
      servers: cluster.urls,
      clients: settings.clients,
      seed: settings.seed,
      attemptMs,
      opDeadlineMs: 12_000,
    });
    await workload.setup();
    t0 = Date.now();
    workload.start();
    const at = (fraction: number) => t0 + Math.round(settings.durationMs * (fraction + (rng.next() - 0.5) * 0.06));
    const waitUntil = async (instant: number) => sleep(Math.max(0, instant - Date.now()));

    // 1. SIGKILL an instance and start it again.
    await waitUntil(at(0.15));
    const killA = Date.now();
    await a.kill();
    processes.delete(a);
    faults.push({ fault: "SIGKILL instance", target: "A", atMs: killA - t0 });
    log(`SIGKILL A at ${killA - t0} ms`);
    await sleep(500 + rng.int(1000));
    a = await start("A2");
    faults.push({ fault: "restart instance", target: "A2", atMs: Date.now() - t0, tookMs: Date.now() - killA });
    // Requests sent to A just before it died go unanswered: that is the fault, not a lapse.
    outages.push({ from: killA - attemptMs, until: Date.now() + RECOVERY_MS });

    // 2. SIGKILL nats-server (or the event stream's leader node) and start it again on the same port and store.
    await waitUntil(at(0.4));
    const node = await cluster.leaderOf(stream);
    const killNats = Date.now();
    await cluster.kill(node, "SIGKILL");
    faults.push({
      fault: settings.cluster ? "SIGKILL stream leader node" : "SIGKILL nats-server",
      target: cluster.nodes[node]!.name,
      atMs: killNats - t0,
    });
    log(`SIGKILL nats ${cluster.nodes[node]!.name} at ${killNats - t0} ms`);
    await sleep(1500 + rng.int(1000));
    await cluster.restart(node);
    const back = Date.now();
    faults.push({ fault: "restart nats-server", target: cluster.nodes[node]!.name, atMs: back - t0, tookMs: back - killNats });
    outages.push({ from: killNats - attemptMs, until: back + RECOVERY_MS });
    log(`nats ${cluster.nodes[node]!.name} back at ${back - t0} ms`);

    // 3. SIGTERM the other instance while the load goes on.
    await waitUntil(Math.max(at(0.7), back + RECOVERY_MS));
    await terminate(b, t0, "SIGTERM instance");

    await waitUntil(t0 + settings.durationMs);
    await workload.stop();
    const loadEnd = Date.now();
    log(`load stopped after ${loadEnd - t0} ms: ${workload.records.length} operations`);

    // 4. A fresh instance must answer as the survivor did.
    // Reads after the faults are owed quickly; a short deadline keeps a wedged service from stretching the run.
    const probe = await workload.client("probe", 5000);
    const fixed = await fixLocks(probe, workload.lockNames);
    const survivorView = await readView(probe, workload);
    const fresh = await start("C");
    faults.push({ fault: "start fresh instance", target: "C", atMs: Date.now() - t0 });
    await terminate(a, t0, "SIGTERM instance");
    const freshView = await readView(probe, workload);
    compareViews(survivorView, freshView, fixed, verdict);
    await terminate(fresh, t0, "SIGTERM instance");
    await workload.stop();

    // 5. The records and the stream.
    const messages = await readWholeStream(cluster.urls, stream);
    checkRun(workload.records, messages, { prefix, cooldownMs: COOLDOWN_MS, maxTtlMs: MAX_TTL_MS }, verdict);
    checkTimeouts(workload.records, outages, t0, verdict);
    return chaosReport({ settings, records: workload.records, messages, outages, faults, verdict, t0, loadEnd });
  } finally {
    await workload?.stop().catch(() => undefined);
    await Promise.all([...processes].map((p) => p.kill()));
    await cluster.stop();
  }
}

/** Starts `serve` on every node of the cluster with the run's settings. */
function startServe(cluster: LocalNatsCluster, name: string, prefix: string, replicas: number): Promise<ServeProcess> {
  return ServeProcess.startOn(cluster, {
    name,
    prefix,
    replicas,
    args: ["--cooldown-ms", String(COOLDOWN_MS), "--max-ttl-ms", String(MAX_TTL_MS)],
  });
}

/** A lease the probe holds on each lock for the comparison (long enough to outlive it), by name. */
type FixedLocks = Map<string, Record<string, unknown>>;

/** Takes every lock for 25 s (waiting out the clients' short leases), so both views must show the same lease. */
async function fixLocks(probe: RecordingClient, names: readonly string[]): Promise<FixedLocks> {
  const fixed: FixedLocks = new Map();
  for (const name of names) {
    // The clients' leases last at most 3 s: 4 s of trying is enough for a service that answers.
    const until = Date.now() + 4000;
    while (Date.now() < until) {
      const r = await probe.call("lock.acquire", { name, owner: "probe", ttlMs: 25_000 });
      if (r.result.status === "ok") {
        fixed.set(name, r.result.body.lease as Record<string, unknown>);
        break;
      }
      await sleep(100);
    }
  }
  return fixed;
}

/** A read and when it was made (a lease's expiry decides what it may show). */
interface TimedRead {
  readonly body: unknown;
  readonly invokeAt: number;
  readonly returnAt: number;
}

/** What the reads answer: every lock, the proxies (without load), every route, the hosts. */
interface View {
  readonly locks: Map<string, TimedRead>;
  readonly proxies: unknown;
  readonly routes: Map<string, unknown>;
  readonly hosts: unknown;
}

async function readView(probe: RecordingClient, workload: Workload): Promise<View> {
  const body = async (command: string, request: Record<string, unknown>) => {
    const r = await probe.call(command, request);
    return r.result.status === "ok" ? r.result.body : { unanswered: r.result };
  };
  const locks = new Map<string, TimedRead>();
  for (const name of workload.lockNames) {
    const invokeAt = Date.now();
    const read = await body("lock.get", { name });
    locks.set(name, { body: read, invokeAt, returnAt: Date.now() });
  }
  const routes = new Map<string, unknown>();
  for (const route of workload.routeNames) {
    const view = (await body("route.get", { route })) as { leases?: Record<string, unknown>[] };
    // lastUsedAt may be coalesced in memory (the contract allows it to lag in the stream).
    routes.set(route, { ...view, leases: view.leases?.map(({ lastUsedAt: _lastUsedAt, ...rest }) => rest) });
  }
  const proxies = (await body("proxy.list", {})) as { proxies?: Record<string, unknown>[] };
  const now = Date.now();
  // Load and cooldowns move with the clock: compare the registrations and the cooldowns that outlast both reads.
  const stable = proxies.proxies?.map(({ active: _active, cooldowns, ...rest }) => ({
    ...rest,
    cooldowns: ((cooldowns ?? []) as { untilAt: string }[]).filter((c) => Date.parse(c.untilAt) > now + 10_000),
  }));
  return { locks, proxies: stable ?? proxies, routes, hosts: await body("host.list", {}) };
}

function compareViews(survivor: View, fresh: View, fixed: FixedLocks, verdict: VerdictBuilder): void {
  const same = (what: string, a: unknown, b: unknown) => {
    if (JSON.stringify(a) !== JSON.stringify(b))
      verdict.add("fresh-instance-disagrees", `${what}: survivor ${JSON.stringify(a)}, fresh ${JSON.stringify(b)}`);
  };
  // Only the probe's 25 s leases are sure to outlive both reads; a lock the probe could not take is named by request-unanswered.
  for (const [name, lease] of fixed) {
    // Each read must show the probe's lease while it is surely live, and nothing once it has surely expired.
    const expiresAtMs = Date.parse(String(lease.expiresAt));
    for (const [who, read] of [
      ["survivor", survivor.locks.get(name)],
      ["fresh", fresh.locks.get(name)],
    ] as const) {
      if (read === undefined) continue;
      const expected =
        expiresAtMs > read.returnAt ? { lease, waiters: 0 } : expiresAtMs <= read.invokeAt ? { lease: null, waiters: 0 } : undefined;
      if (expected !== undefined)
        same(`lock.get ${name} (${who}, the probe's lease until ${String(lease.expiresAt)})`, expected, read.body);
    }
  }
  for (const [route, view] of survivor.routes) same(`route.get ${route}`, view, fresh.routes.get(route));
  same("proxy.list", survivor.proxies, fresh.proxies);
  same("host.list", survivor.hosts, fresh.hosts);
}

/** The checks every report names, for help texts. */
export const CHECK_NAMES = Object.keys(CHAOS_CHECKS) as ChaosCheck[];
