/**
 * One simulation run: a cluster of instances on one log, a scenario of
 * faults (drawn by fast-check), the kind's clients, all driven by
 * fast-check's scheduler; then the verdict: the chaos test's checks over the
 * clients' records and the log (the audit's rules, one event per requestId,
 * acknowledged commands present, lock histories linearizable, one host per
 * route key) and the simulation's own (a repeated request answered as the
 * first was, a live instance answering within its deadline, proxy caps as
 * the replies show them).
 */
import fc, { type Scheduler } from "fast-check";
import { vi } from "vitest";
import type { ServiceConfig } from "../../../src/config.ts";
import { CHAOS_CHECKS, checkRun, VerdictBuilder, type ChaosCheck } from "../../chaos/checks.ts";
import type { OpRecord } from "../../chaos/history.ts";
import { SimClients } from "./clients.ts";
import { FaultPlan, type AppendFault, type ReadFault } from "./scheduled-log.ts";
import { drive, resetSimTimers, SIM_T0, SimCluster, type Mutation, type SimKind } from "./sim-cluster.ts";

/** The faults and events of one run, besides the clients' own traffic. */
export interface Scenario {
  /** Instances sharing the log. */
  readonly instances: number;
  readonly appendFaults: readonly AppendFault[];
  readonly readFaults: readonly ReadFault[];
  /** Slots whose instance crashes (at a moment the scheduler picks) and restarts from the log. */
  readonly crashes: readonly number[];
  /** Slots whose followers stop delivering (and, when `resume`, start again later; otherwise only the watchdog restarts them). */
  readonly pauses: readonly { readonly slot: number; readonly resume: boolean }[];
  /** Steps of the simulated clock (ms), each at a moment the scheduler picks. */
  readonly ticks: readonly number[];
}

const weighted = <T>(common: T, rare: readonly T[], commonWeight: number) =>
  fc.oneof({ weight: commonWeight, arbitrary: fc.constant(common) }, ...rare.map((r) => ({ weight: 1, arbitrary: fc.constant(r) })));

/** The fault scenarios fast-check draws from (and shrinks towards no faults). */
export function scenarioArb(options: { appendFaults?: readonly AppendFault[] } = {}): fc.Arbitrary<Scenario> {
  const appendFaults = options.appendFaults ?? ["conflict", "fail", "lost-ack", "hang", "hang-after-store", "stuck"];
  return fc.record({
    instances: fc.integer({ min: 2, max: 3 }),
    appendFaults: fc.array(weighted<AppendFault>("none", appendFaults, 6), { maxLength: 16 }),
    readFaults: fc.array(weighted<ReadFault>("none", ["fail", "hang"], 8), { maxLength: 12 }),
    crashes: fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 1 }),
    pauses: fc.array(fc.record({ slot: fc.integer({ min: 0, max: 2 }), resume: fc.boolean() }), { maxLength: 1 }),
    ticks: fc.array(fc.integer({ min: 0, max: 4000 }), { maxLength: 6 }),
  });
}

/** Service settings of every run (short TTLs and cooldowns so expiry happens within a run). */
export const SIM_SETTINGS: Partial<ServiceConfig> = {
  lockTtlMs: 5000,
  maxTtlMs: 30_000,
  cooldownMs: 20_000,
  routeIdleMs: 600_000,
  dedupWindowMs: 120_000,
  requestTimeoutMs: 3000,
};

/**
 * How long after the clients are done a live instance may still answer a
 * send they gave up on: generous, since this only tells a bounded wait from
 * one that never ends. (An application command now has one deadline for all
 * its reads and turns: the slowest answers seen are one request timeout.)
 */
const OWED_WITHIN_MS = 60_000;

/** What the kind's clients do, given the running cluster. */

export type Workload = (clients: SimClients, cluster: SimCluster) => Promise<unknown>;

/** A setup with nothing to do. */
export const noSetup: Workload = () => Promise.resolve();

/** What a run left behind. */
export interface SimOutcome {
  readonly cluster: SimCluster;
  readonly clients: SimClients;
  /** Every broken check, with examples; empty when the run is clean. */
  readonly problems: string[];
}

/** Checks of the chaos verdict that judge the clients' patience rather than the service (sim clients give up on purpose). */
const NOT_JUDGED = new Set<ChaosCheck>([
  "request-unanswered",
  "attempt-timed-out-outside-faults",
  "sigterm-exit",
  "fresh-instance-disagrees",
]);

/** Commands whose success recorded an event: a repeat of the same requestId owes the same reply. */
const REPLAYED = new Set(["lock.acquire", "lock.renew", "lock.release", "lock.reset", "proxy.acquire"]);

/** Runs one scenario of `kind` with `setup` (sequential) then `workload` (concurrent clients). */
export async function simulate(
  s: Scheduler,
  kind: SimKind,
  scenario: Scenario,
  setup: Workload,
  workload: Workload,
  mutation?: Mutation,
): Promise<SimOutcome> {
  // Every run starts at SIM_T0 with no timer left from the last one: a run (or a shrunk replay) depends on its seed alone.
  resetSimTimers();
  const cluster = new SimCluster({
    s,
    plan: new FaultPlan(scenario.appendFaults, scenario.readFaults),
    kind,
    settings: SIM_SETTINGS,
    mutation,
  });
  const horizonMs = 600_000;
  let started = false;
  void Promise.all(Array.from({ length: scenario.instances }, (_, slot) => cluster.start(slot))).then(() => (started = true));
  await drive(s, () => started, horizonMs);

  const clients = new SimClients(cluster, s, 2 * cluster.config.requestTimeoutMs);
  let setupDone = false;
  void setup(clients, cluster).then(() => (setupDone = true));
  await drive(s, () => setupDone, horizonMs);

  let pending = 0;
  const track = (work: Promise<unknown>) => {
    pending++;
    void work.finally(() => pending--);
  };
  const at = (label: string) => s.schedule(Promise.resolve(), label);
  track(
    (async () => {
      for (const ms of scenario.ticks) {
        await at(`clock +${ms} ms`);
        // Timer by timer, each one's promise callbacks run before the next fires (as on a real clock).
        await vi.advanceTimersByTimeAsync(ms);
      }
    })(),
  );
  for (const slot of scenario.crashes.filter((c) => c < scenario.instances)) {
    track(at(`crash slot ${slot}`).then(() => cluster.crashAndRestart(slot)));
  }
  for (const pause of scenario.pauses.filter((p) => p.slot < scenario.instances)) {
    track(
      (async () => {
        await at(`pause followers of slot ${pause.slot}`);
        const view = cluster.instance(pause.slot)?.view;
        view?.pauseFollowers();
        if (!pause.resume) return;
        await at(`resume followers of slot ${pause.slot}`);
        view?.resumeFollowers();
      })(),
    );
  }
  track(workload(clients, cluster));
  await drive(s, () => pending === 0, horizonMs);
  // Sends the clients gave up on: a live instance still owes each an answer, within a bounded time.
  const owedUntil = Date.now() + OWED_WITHIN_MS;
  await drive(
    s,
    () => Date.now() >= owedUntil || clients.overdue.every((o) => o.answeredAt !== undefined || o.instance.crashed),
    horizonMs,
  );
  return { cluster, clients, problems: judge(cluster, clients) };
}

/** Every check of the run; empty when all held. */
export function judge(cluster: SimCluster, clients: SimClients): string[] {
  const problems: string[] = [];
  const verdict = new VerdictBuilder();
  const { config } = cluster;
  checkRun(
    clients.records,
    cluster.log.messages,
    { prefix: config.prefix, cooldownMs: config.cooldownMs, maxTtlMs: config.maxTtlMs },
    verdict,
  );
  const built = verdict.build();
  for (const check of Object.keys(CHAOS_CHECKS) as ChaosCheck[]) {
    if (NOT_JUDGED.has(check) || built.violations[check] === 0) continue;
    problems.push(`${check} (${built.violations[check]}): ${(built.examples[check] ?? []).join(" | ")}`);
  }
  for (const [requestId, replies] of clients.replies) {
    const record = clients.records.find((r) => r.requestId === requestId)!;
    if (!REPLAYED.has(record.command)) continue;
    const oks = replies.filter((r) => r.result.ok).map((r) => JSON.stringify(r.result.ok ? r.result.reply : null));
    if (new Set(oks).size > 1) problems.push(`repeat-answered-differently: ${record.command} ${requestId}: ${oks.join(" vs ")}`);
  }
  for (const o of clients.overdue) {
    if (o.answeredAt === undefined && !o.instance.crashed)
      problems.push(
        `live-instance-never-answered: ${o.instance.name} never answered ${o.command} ${o.requestId} sent at +${o.sentAt - SIM_T0} ms`,
      );
  }
  problems.push(...proxyCapsFromReplies(clients.records));
  return problems;
}

/**
 * Proxy caps as the clients saw them: leases granted (ok replies) and never
 * released, whose terms overlap at the instant a
 * lease was granted, never outnumber the proxy's maxLeases.
 */
function proxyCapsFromReplies(records: readonly OpRecord[]): string[] {
  const caps = new Map<string, number>();
  for (const r of records) {
    if (r.command === "proxy.register" && r.result.status === "ok") caps.set(String(r.body.proxy), Number(r.body.maxLeases));
  }
  // A release whose outcome the client never learned may have freed its lease: only leases never released count.
  const released = new Set(records.filter((r) => r.command === "proxy.release").map((r) => String(r.body.leaseId)));
  const leases = records.flatMap((r) => {
    if (r.command !== "proxy.acquire" || r.result.status !== "ok") return [];
    const lease = r.result.body.lease as { id: string; proxy: string; expiresAt: string };
    const until = Date.parse(lease.expiresAt);
    return [{ id: lease.id, proxy: lease.proxy, from: until - Number(r.body.ttlMs), until }];
  });
  const problems: string[] = [];
  for (const g of leases) {
    const cap = caps.get(g.proxy);
    if (cap === undefined) continue;
    const live = leases.filter((l) => l.proxy === g.proxy && !released.has(l.id) && l.from <= g.from && g.from < l.until);
    if (live.length > cap && !released.has(g.id))
      problems.push(`proxy-cap-exceeded (replies): ${g.proxy} (maxLeases ${cap}) held ${live.map((l) => l.id).join(", ")} at ${g.from}`);
  }
  return problems;
}
