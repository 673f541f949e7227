/**
 * The clock-skew run: one nats-server, two `leasehold serve` instances, one
 * of them with its clock `skewMs` ahead of the machine's (the
 * LEASEHOLD_TEST_CLOCK_OFFSET_MS test hook), and clients spread over both.
 * Every check of checks.ts runs (the audit sees each event's `at` as the
 * deciding instance wrote it, so it cannot see skew), and the overlapping
 * holds are counted as clients with true clocks see them.
 */
import { randomUUID } from "node:crypto";
import { startLocalNatsServer, type LocalNatsCluster } from "../../src/cluster/local-cluster.ts";
import { CLOCK_OFFSET_VARIABLE } from "../../src/cli/clock-offset.ts";
import { localDeadline } from "../../src/client/index.ts";
import { eventStreamOf } from "../faults/drill.ts";
import { checkRun, checkTimeouts, VerdictBuilder, type ChaosCheck } from "./checks.ts";
import { checkHolds } from "./holds.ts";
import { chaosReport, terminateAll } from "./report.ts";
import type { ChaosReport, FaultRecord } from "./scenario.ts";
import { ServeProcess } from "./serve-process.ts";
import { readWholeStream } from "./stream.ts";
import { Workload } from "./workload.ts";

/** Settings of a skew run. */
export interface SkewSettings {
  readonly seed: number;
  readonly durationMs: number;
  readonly clients: number;
  /** How far the second instance's clock runs ahead, ms. */
  readonly skewMs: number;
  /** The skew margin the holders keep, as the lock keeper's `clockSkewMarginMs` (the holds are judged with it). */
  readonly holderMarginMs: number;
  readonly log?: (line: string) => void;
}

/**
 * The lock model of the linearizability check judges expiry by the clients'
 * (true) clocks; the contract has the deciding instance's clock decide it, so
 * under skew that check finds what this run measures, and is reported only.
 */
const NOT_JUDGED: readonly ChaosCheck[] = ["lock-history-not-linearizable"];
const COOLDOWN_MS = 3000;
const MAX_TTL_MS = 30_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the skew scenario; every process it started is gone when it resolves or throws. */
export async function runSkew(settings: SkewSettings): Promise<ChaosReport> {
  const log = settings.log ?? (() => undefined);
  const prefix = `skew${randomUUID().replaceAll("-", "").slice(0, 10)}`;
  const faults: FaultRecord[] = [];
  const instances: ServeProcess[] = [];
  let workload: Workload | undefined;
  const cluster: LocalNatsCluster = await startLocalNatsServer();
  try {
    const args = ["--cooldown-ms", String(COOLDOWN_MS), "--max-ttl-ms", String(MAX_TTL_MS)];
    instances.push(await ServeProcess.startOn(cluster, { name: "A", prefix, args }));
    instances.push(
      await ServeProcess.startOn(cluster, { name: "B", prefix, args, env: { [CLOCK_OFFSET_VARIABLE]: String(settings.skewMs) } }),
    );
    faults.push({ fault: `clock ${settings.skewMs >= 0 ? "+" : ""}${settings.skewMs} ms`, target: "B", atMs: 0 });
    log(
      `nats ${cluster.urls[0]}, prefix ${prefix}, seed ${settings.seed}; B's clock ${settings.skewMs} ms ahead, holders keep ${settings.holderMarginMs} ms`,
    );
    workload = new Workload({
      prefix,
      servers: cluster.urls,
      clients: settings.clients,
      seed: settings.seed,
      // Leases of 8 to 12 s (the lock keeper keeps its whole 2 s margin from 8 s on), half of them left to
      // expire, so that locks change hands on expiry, where a clock running ahead decides early.
      lockTtlMs: [8000, 12_000],
      abandonLocks: 0.5,
    });
    await workload.setup();
    const t0 = Date.now();
    workload.start();
    await sleep(settings.durationMs);
    await workload.stop();
    const loadEnd = Date.now();
    const verdict = new VerdictBuilder();
    await terminateAll(instances, faults, t0, verdict);
    const records = workload.records;
    const messages = await readWholeStream(cluster.urls, eventStreamOf(prefix));
    checkRun(records, messages, { prefix, cooldownMs: COOLDOWN_MS, maxTtlMs: MAX_TTL_MS }, verdict);
    checkTimeouts(records, [], t0, verdict);
    // Holders count on a lease as the lock keeper does: from the attempt's send, for the TTL less the margin.
    checkHolds(records, messages, (a) => localDeadline(a.sentAt, a.ttlMs, settings.holderMarginMs), t0, verdict);
    return chaosReport({
      settings: { ...settings, cluster: false },
      records,
      messages,
      outages: [],
      faults,
      verdict,
      t0,
      loadEnd,
      notJudged: NOT_JUDGED,
    });
  } finally {
    await workload?.stop().catch(() => undefined);
    await Promise.all(instances.map((p) => p.kill()));
    await cluster.stop();
  }
}
