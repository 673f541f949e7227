/**
 * The NATS-restart drill of issue 9: two `leasehold serve` processes under a
 * mixed load of recording clients; the nats-server (or the node leading the
 * event stream on a cluster) is SIGKILLed and started again on the same port
 * and store; the load goes on; then both instances get SIGTERM. Returns the
 * figures the fault tests assert on.
 */
import { randomUUID } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { startLocalCluster, type LocalNatsCluster } from "../../src/cluster/local-cluster.ts";
import { availability, longestWaitAfter, unservedBreakdown, type Availability, type OpRecord } from "../chaos/history.ts";
import { ServeProcess } from "../chaos/serve-process.ts";
import { Workload } from "../chaos/workload.ts";

/** Settings of one drill. */
export interface DrillSettings {
  /** 1: a single nats-server; 3: a cluster with streams at three replicas. */
  readonly nodes: 1 | 3;
  readonly clients?: number;
  /** Load before the kill, ms. */
  readonly warmupMs?: number;
  /** How long NATS stays down, ms. */
  readonly downMs?: number;
  /** Load after NATS is back, ms. */
  readonly afterMs?: number;
  /** Per-attempt deadline of the clients, ms. */
  readonly attemptMs?: number;
  /** What the service is allowed after NATS is back before every instance must answer again, ms. */
  readonly recoveryMs?: number;
  readonly seed?: number;
}

/** What a drill measured. */
export interface DrillReport {
  readonly availability: Availability;
  /** Longest wait, counted from NATS being back, of any operation open then or started later, ms. */
  readonly longestWaitAfterBackMs: number;
  /** Attempts sent once the recovery allowance had passed that got no answer in time (timeout, no responder, UNAVAILABLE). */
  readonly unservedAfterRecovery: number;
  /** The unserved attempts after recovery by outcome, command and second after NATS was back (for the lead's diagnosis). */
  readonly unservedBreakdown: Readonly<Record<string, number>>;
  readonly faults: readonly { readonly fault: string; readonly node?: string; readonly at: number }[];
  readonly killAt: number;
  /** When the killed node was up and healthy again. */
  readonly restartedAt: number;
  /** When the event stream took writes again (it has a leader): NATS is back for the service. */
  readonly backAt: number;
  /** How each instance ended on SIGTERM. */
  readonly exits: readonly {
    readonly name: string;
    readonly code: number | null;
    readonly signal: string | null;
    readonly ms: number;
    readonly timedOut: boolean;
  }[];
  /** ms after NATS was back until each instance answered `$SRV.PING` (null: never within the load). */
  readonly pingBackMs: Readonly<Record<string, number | null>>;
  readonly records: readonly OpRecord[];
  /** The ends of the instances' logs, for a failure message. */
  readonly logs: Readonly<Record<string, string>>;
}

/** The event stream's name for a prefix (as the service names it). */
export function eventStreamOf(prefix: string): string {
  return `${prefix.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_EVENTS`;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the drill and always cleans up its processes. */
export async function runRestartDrill(settings: DrillSettings): Promise<DrillReport> {
  const attemptMs = settings.attemptMs ?? 2000;
  const recoveryMs = settings.recoveryMs ?? 5000;
  const prefix = `drill${randomUUID().replaceAll("-", "").slice(0, 10)}`;
  const cluster: LocalNatsCluster = await startLocalCluster({ size: settings.nodes });
  const instances: ServeProcess[] = [];
  let workload: Workload | undefined;
  try {
    const replicas = settings.nodes === 3 ? 3 : 1;
    instances.push(
      ...(await Promise.all(
        ["A", "B"].map((name) => ServeProcess.startOn(cluster, { name, prefix, replicas, args: ["--cooldown-ms", "3000"] })),
      )),
    );
    workload = new Workload({
      prefix,
      servers: cluster.urls,
      clients: settings.clients ?? 16,
      seed: settings.seed ?? 1,
      attemptMs,
      opDeadlineMs: recoveryMs + 2 * attemptMs,
    });
    await workload.setup();
    workload.start();
    await sleep(settings.warmupMs ?? 3000);

    const node = await cluster.leaderOf(eventStreamOf(prefix));
    const faults: { fault: string; node?: string; at: number }[] = [];
    const killAt = Date.now();
    await cluster.kill(node, "SIGKILL");
    faults.push({ fault: "SIGKILL nats-server", node: cluster.nodes[node]!.name, at: killAt });
    await sleep(settings.downMs ?? 2000);
    await cluster.restart(node);
    const restartedAt = Date.now();
    faults.push({ fault: "nats-server back (restarted, healthy)", node: cluster.nodes[node]!.name, at: restartedAt });
    // NATS is back for the service once the stream takes writes again: on a cluster, once the surviving
    // replicas (or the restarted one) have elected a stream leader, which NATS's raft does 4-9 s after
    // the leader died, often after the killed node is up again (docs/testing.md).
    await streamLeaderElected(cluster.urls, eventStreamOf(prefix), 20_000);
    const backAt = Date.now();
    faults.push({ fault: "the event stream has a leader again", at: backAt });

    const pingBackMs = await pingEveryInstance(cluster.urls, instances, backAt, settings.afterMs ?? 8000);
    const endOfLoad = backAt + (settings.afterMs ?? 8000);
    await sleep(Math.max(0, endOfLoad - Date.now()));
    await workload.stop();
    const endAt = Date.now();

    const exits = await Promise.all(instances.map(async (p) => ({ name: p.name, ...(await p.terminate(10_000)) })));
    const records = workload.records;
    return {
      availability: availability(records, [{ from: killAt, until: backAt + recoveryMs }], endAt),
      longestWaitAfterBackMs: longestWaitAfter(records, backAt, endAt),
      unservedAfterRecovery: availability(records, [{ from: 0, until: backAt + recoveryMs }], endAt).unservedOutsideOutages,
      unservedBreakdown: unservedBreakdown(records, [{ from: 0, until: backAt + recoveryMs }], backAt),
      faults,
      killAt,
      restartedAt,
      backAt,
      exits,
      pingBackMs,
      records,
      logs: Object.fromEntries(instances.map((p) => [p.name, p.logTail])),
    };
  } finally {
    await workload?.stop().catch(() => undefined);
    await Promise.all(instances.map((p) => p.kill()));
    await cluster.stop();
  }
}

/** Polls the stream's info until it names a leader (the stream takes writes again); throws after `withinMs`. */
async function streamLeaderElected(servers: readonly string[], stream: string, withinMs: number): Promise<void> {
  const nc = await connect({ servers: [...servers], name: "drill-leader-look", maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 1000 });
    const deadline = Date.now() + withinMs;
    for (;;) {
      const info = await jsm.streams.info(stream).catch(() => undefined);
      if (info !== undefined && (info.cluster === undefined || info.cluster.leader !== undefined)) return;
      if (Date.now() > deadline) throw new Error(`${stream} has no leader ${withinMs} ms after the restart`);
      await sleep(50);
    }
  } finally {
    await nc.close();
  }
}

/** Polls `$SRV.PING.leasehold.<id>` of each instance until it answers; ms after `backAt`, or null. */
async function pingEveryInstance(
  servers: readonly string[],
  instances: readonly ServeProcess[],
  backAt: number,
  withinMs: number,
): Promise<Record<string, number | null>> {
  const nc = await connect({ servers: [...servers], name: "drill-ping", maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  try {
    const answered = await Promise.all(
      instances.map(async (p) => {
        while (Date.now() < backAt + withinMs) {
          try {
            await nc.request(`$SRV.PING.leasehold.${p.instanceId}`, "", { timeout: 500 });
            return [p.name, Date.now() - backAt] as const;
          } catch {
            await sleep(100);
          }
        }
        return [p.name, null] as const;
      }),
    );
    return Object.fromEntries(answered);
  } finally {
    await nc.close();
  }
}

/** A one-line summary of a drill for logs and failure messages. */
export function describeDrill(report: DrillReport): string {
  const a = report.availability;
  return (
    `stream leader ${report.backAt - report.killAt} ms after the kill, ${report.backAt - report.restartedAt} ms after the node was up; ` +
    `requests ${a.requests} (attempts ${a.attempts}, ok ${a.ok}, refused ${a.refused}, unknown ${a.unknown}); ` +
    `longest unavailability ${a.longestUnavailableMs} ms; longest wait after NATS back ${report.longestWaitAfterBackMs} ms; ` +
    `unserved attempts after recovery ${report.unservedAfterRecovery} ${JSON.stringify(report.unservedBreakdown)}; ping back ${JSON.stringify(report.pingBackMs)}; ` +
    `exits ${JSON.stringify(report.exits)}`
  );
}
