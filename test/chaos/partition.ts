/**
 * The partition run: a three-node cluster whose third node lives in a
 * network namespace of its own (netns.ts); two `leasehold serve` instances
 * on the first two nodes, one on the third, and clients on both sides. Its
 * routes are cut for part of the load (the stream's leader moved onto it
 * first on odd seeds, so the majority must elect another), then restored.
 * Besides every check of checks.ts: each answer the minority side gave to a
 * request sent during the partition, once the cut-off leader's lease has run
 * out, is UNAVAILABLE or a read (lock answers, before it too, are judged by
 * the linearizability check like every other), no two clients
 * hold one lock at once by their own clocks, and the instance on the
 * minority side grants a lock within 5 s of the heal, without a restart.
 */
import { randomUUID } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import { startLocalCluster, type LocalNatsCluster } from "../../src/cluster/local-cluster.ts";
import { LEADER_LEASE_MS } from "../../src/events/leader-lease.ts";
import { eventStreamOf } from "../faults/drill.ts";
import { checkRun, checkTimeouts, VerdictBuilder } from "./checks.ts";
import type { OpRecord, Outage } from "./history.ts";
import { checkHolds, untilExpiresAt } from "./holds.ts";
import { isolateNode } from "./netns.ts";
import { chaosReport, terminateAll } from "./report.ts";
import type { ChaosReport, FaultRecord } from "./scenario.ts";
import { ServeProcess } from "./serve-process.ts";
import { readWholeStream } from "./stream.ts";
import { Rng, Workload } from "./workload.ts";

/** Settings of a partition run. */
export interface PartitionSettings {
  readonly seed: number;
  /** Length of the loaded part, ms: the partition lasts from 25 % to 65 % of it. */
  readonly durationMs: number;
  readonly clients: number;
  /** How many of the clients stay on the minority node (default a quarter, at least one). */
  readonly minorityClients?: number;
  readonly attemptMs?: number;
  readonly log?: (line: string) => void;
}

const COOLDOWN_MS = 3000;
const MAX_TTL_MS = 30_000;
const RECOVERY_MS = 5000;
/** Commands that only read: the minority side may answer them from what it knows. */
const READS = new Set(["lock.get", "route.get", "proxy.counts", "proxy.list", "host.list", "host.get"]);
const MINORITY = 2;
/**
 * Until a leader cut off from its quorum has gone LEADER_LEASE_MS without
 * hearing from it, no other leader can have been elected and its answers
 * are still current (src/events/leader-lease.ts); a second more for delays.
 */
const LEASE_OUT_MS = LEADER_LEASE_MS + 1000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the partition scenario; every process, namespace and link it made is gone when it resolves or throws. */
export async function runPartition(settings: PartitionSettings): Promise<ChaosReport> {
  const log = settings.log ?? (() => undefined);
  const rng = new Rng(settings.seed ^ 0x9a27);
  const attemptMs = settings.attemptMs ?? 2000;
  const prefix = `part${randomUUID().replaceAll("-", "").slice(0, 10)}`;
  const stream = eventStreamOf(prefix);
  const net = isolateNode(MINORITY);
  const faults: FaultRecord[] = [];
  const instances: ServeProcess[] = [];
  let workload: Workload | undefined;
  let cluster: LocalNatsCluster | undefined;
  try {
    cluster = await startLocalCluster({ size: 3, network: net.network });
    const majority = cluster.urls.slice(0, MINORITY);
    const minority = [cluster.urls[MINORITY]!];
    log(
      `nats: majority ${majority.join(",")}, minority ${minority[0]} (its own network namespace), prefix ${prefix}, seed ${settings.seed}`,
    );
    const args = ["--cooldown-ms", String(COOLDOWN_MS), "--max-ttl-ms", String(MAX_TTL_MS)];
    for (const [name, urls] of [
      ["A", majority],
      ["B", majority],
      ["M", minority],
    ] as const)
      instances.push(await ServeProcess.start({ name, nats: urls.join(","), prefix, replicas: 3, args }));

    const minorityClients = settings.minorityClients ?? Math.max(1, Math.floor(settings.clients / 4));
    const onMinority = new Set(Array.from({ length: minorityClients }, (_, i) => `c${i}`));
    workload = new Workload({
      prefix,
      servers: majority,
      serversOf: (i) => (i < minorityClients ? minority : majority),
      clients: settings.clients,
      seed: settings.seed,
      attemptMs,
      // An operation begun before the cut keeps retrying through the partition and the recovery allowance.
      opDeadlineMs: settings.durationMs * 0.4 + RECOVERY_MS + 2 * attemptMs,
    });
    await workload.setup();
    if (settings.seed % 2 === 1) await leadFrom(cluster, stream, MINORITY, log);
    const leader = cluster.nodes[await cluster.leaderOf(stream)]!.name;
    const t0 = Date.now();
    workload.start();
    const at = (fraction: number) => t0 + Math.round(settings.durationMs * (fraction + (rng.next() - 0.5) * 0.04));

    await sleep(Math.max(0, at(0.25) - Date.now()));
    const cutAt = Date.now();
    net.cut();
    faults.push({
      fault: `partition: routes of ${cluster.nodes[MINORITY]!.name} cut (stream leader ${leader})`,
      target: "M",
      atMs: cutAt - t0,
    });
    log(`cut ${cluster.nodes[MINORITY]!.name} off at ${cutAt - t0} ms (stream leader was ${leader})`);

    await sleep(Math.max(0, at(0.65) - Date.now()));
    const healAt = Date.now();
    net.heal();
    log(`healed at ${healAt - t0} ms`);
    const servedAt = await firstGrant(workload, minority, healAt + RECOVERY_MS);
    faults.push({
      fault: "partition healed; the minority's instance granted a lock",
      target: "M",
      atMs: healAt - t0,
      ...(servedAt === undefined ? {} : { tookMs: servedAt - healAt }),
    });
    log(`M granted a lock ${servedAt === undefined ? "never" : `${servedAt - healAt} ms`} after the heal`);

    await sleep(Math.max(0, t0 + settings.durationMs - Date.now()));
    await workload.stop();
    const loadEnd = Date.now();
    const verdict = new VerdictBuilder();
    await terminateAll(instances, faults, t0, verdict);

    const records = workload.records;
    const messages = await readWholeStream(cluster.urls, stream);
    const outages: Outage[] = [{ from: cutAt - attemptMs, until: healAt + RECOVERY_MS }];
    checkRun(records, messages, { prefix, cooldownMs: COOLDOWN_MS, maxTtlMs: MAX_TTL_MS }, verdict);
    checkTimeouts(records, outages, t0, verdict);
    checkMinorityAnswers(records, onMinority, cutAt + LEASE_OUT_MS, healAt, t0, verdict);
    checkHolds(records, messages, untilExpiresAt(), t0, verdict);
    if (servedAt === undefined || servedAt - healAt > RECOVERY_MS)
      verdict.add("minority-not-served-after-heal", `no lock granted by M within ${RECOVERY_MS} ms of the heal`);
    const settingsOfRun = { ...settings, cluster: true };
    return {
      ...chaosReport({ settings: settingsOfRun, records, messages, outages, faults, verdict, t0, loadEnd }),
      minorityAnswers: minorityAnswerCounts(records, onMinority, cutAt + LEASE_OUT_MS, healAt),
    };
  } finally {
    await workload?.stop().catch(() => undefined);
    await Promise.all(instances.map((p) => p.kill()));
    await cluster?.stop();
    net.remove();
  }
}

/** Attempts of minority clients sent after `from` (past the cut) and answered before the heal: only the minority's instance could answer them. */
function minorityAttempts(records: readonly OpRecord[], onMinority: ReadonlySet<string>, from: number, healAt: number) {
  return records
    .filter((r) => onMinority.has(r.client))
    .flatMap((r) => r.attempts.filter((a) => a.sentAt >= from && a.endAt < healAt).map((a) => ({ r, a })));
}

function checkMinorityAnswers(
  records: readonly OpRecord[],
  onMinority: ReadonlySet<string>,
  from: number,
  healAt: number,
  t0: number,
  verdict: VerdictBuilder,
): void {
  for (const { r, a } of minorityAttempts(records, onMinority, from, healAt)) {
    if (a.outcome === "unavailable" || (a.outcome === "ok" && READS.has(r.command))) continue;
    if (a.outcome !== "ok" && a.outcome !== "error") continue; // no answer at all: checkTimeouts' business
    verdict.add(
      "minority-answer-during-partition",
      `${r.client} ${r.command} ${JSON.stringify(r.body)} sent at +${a.sentAt - t0} ms: ${a.outcome}${a.code === undefined ? "" : ` ${a.code}`}`,
    );
  }
}

/** What the minority side answered to requests sent from `from` until the heal, by outcome (and code). */
function minorityAnswerCounts(records: readonly OpRecord[], onMinority: ReadonlySet<string>, from: number, healAt: number) {
  const counts: Record<string, number> = {};
  for (const { r, a } of minorityAttempts(records, onMinority, from, healAt)) {
    const key = `${a.outcome}${a.code === undefined ? "" : ` ${a.code}`}${a.outcome === "ok" ? ` ${r.command}` : ""}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** Asks the minority side for fresh locks until one is granted (or `until` passes); when it was. */
async function firstGrant(workload: Workload, minority: readonly string[], until: number): Promise<number | undefined> {
  // Each probe retries with its requestId until the recovery allowance ends, as the contract tells a client whose
  // request got no answer (its outcome not known) to do.
  const probe = await workload.client("heal-probe", Math.max(1000, until - Date.now()), minority);
  for (let i = 0; Date.now() < until; i++) {
    const r = await probe.call("lock.acquire", { name: `heal-probe-${i}`, owner: "heal-probe", ttlMs: 1000 });
    if (r.result.status === "ok") return r.returnAt!;
  }
  return undefined;
}

/** Asks the stream's leader to step down until `node` leads it (a few tries; the run says where the leader was). */
async function leadFrom(cluster: LocalNatsCluster, stream: string, node: number, log: (line: string) => void): Promise<void> {
  const nc = await connect({ servers: [...cluster.urls], name: "partition-leader", timeout: 5000 });
  try {
    for (let i = 0; i < 8 && (await cluster.leaderOf(stream)) !== node; i++) {
      await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${stream}`, "", { timeout: 2000 }).catch(() => undefined);
      await sleep(1000);
    }
  } finally {
    await nc.close();
  }
  log(`stream leader: ${cluster.nodes[await cluster.leaderOf(stream)]!.name}`);
}
