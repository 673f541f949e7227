/**
 * Bounded queues and tables: what a long wait queue and a flood of host
 * loads cost the service. Two `leasehold serve` processes on one private
 * nats-server, per system (this checkout, and with `--before <checkout>`
 * another one, e.g. a worktree of an earlier commit, built), in this order:
 *
 * 1. acquire+release p50 of other locks (no waiters on them), 2 workers,
 *    after a window of the same to warm up;
 * 2. waiters join one held lock, in chunks, across both instances (the queue
 *    group spreads them), up to `--waiters` (10,000) or a deadline: the
 *    services' CPU per join for 100 joins from 100 waiters on and from 1,000
 *    on (CPU time of every thread of both processes, from /proc schedstat);
 * 3. acquire+release p50 of other locks again, the waiters parked;
 * 4. `--handovers` (20) handovers down the queue: from sending the release
 *    to the next waiter's grant, as its client sees it;
 * 5. a flood of `--loads` (1,000,000) loads for new host names on
 *    `<prefix>.loads.<host>`: RSS growth of each service (last, so that its
 *    garbage does not fall into the other figures).
 *
 * With `--sessions`, each waiter joins under a session of its own (opened
 * before its join, outside the CPU measured), and the flood is left out.
 *
 *   npx tsx bench/bounded-queues.ts [--waiters 10000] [--loads 1000000]
 *        [--handovers 20] [--sessions] [--before <checkout>] [--repeat 1] [--json]
 *
 * Bars (bench/README.md, "Bounded queues"): p50 with the waiters <= 2x without;
 * CPU per join at 1,000 <= 1.5x at 100; every handover <= 50 ms; RSS growth
 * after the flood <= 50 MB.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { randomUUID } from "node:crypto";
import type { Msg, NatsConnection } from "@nats-io/nats-core";
import { firstAnswer, rssMb, spawnServeOf, stopService, type ServiceChild } from "./service-process.ts";
import {
  alternate,
  json,
  markdownTable,
  median,
  parseOwnArgs,
  positiveInt,
  printJson,
  quantile,
  round,
  runBench,
  succeeded,
  withBench,
} from "./support.ts";

const USAGE =
  "usage: npx tsx bench/bounded-queues.ts [--waiters 10000] [--loads 1000000] [--handovers 20] [--sessions] [--before <checkout>] [--repeat 1] [--json]";
const QUEUED = "queued";
/** Long enough for the whole run: waits end only when the services stop. */
const WAIT_MS = 540_000;
const MAX_MS = 600_000;
/** How long the join phase may take before the bench goes on with the waiters it has. */
const JOIN_DEADLINE_MS = 120_000;
/** Joins measured for CPU per join, from each of the two queue lengths. */
const CPU_BATCH = 100;
const CPU_AT = [100, 1000] as const;
const P50_WINDOW_MS = 4000;

interface System {
  readonly name: string;
  /** bin/leasehold.js of the checkout. */
  readonly cli: string;
}

function parse() {
  const values = parseOwnArgs(USAGE, {
    waiters: { type: "string", default: "10000" },
    loads: { type: "string", default: "1000000" },
    handovers: { type: "string", default: "20" },
    before: { type: "string" },
    repeat: { type: "string", default: "1" },
    sessions: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  });
  const systems: System[] = [{ name: "after", cli: fileURLToPath(new URL("../bin/leasehold.js", import.meta.url)) }];
  if (values.before !== undefined) systems.push({ name: "before", cli: join(values.before, "bin/leasehold.js") });
  return {
    waiters: positiveInt("waiters", values.waiters),
    loads: positiveInt("loads", values.loads),
    handovers: positiveInt("handovers", values.handovers),
    repeat: positiveInt("repeat", values.repeat),
    sessions: values.sessions,
    systems,
    json: values.json,
  };
}
type Settings = ReturnType<typeof parse>;

/** CPU seconds of every thread of a process, in ns precision (/proc/<pid>/task/<tid>/schedstat). */
function threadCpuSeconds(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ns / 1e9;
}

/** `leasehold serve` of `system` as a child process. */
function spawnServe(system: System, url: string, prefix: string): ServiceChild {
  return spawnServeOf(system.cli, ["--nats", url, "--prefix", prefix, "--max-ttl-ms", String(MAX_MS), "--max-wait-ms", String(MAX_MS)]);
}

async function request(nc: NatsConnection, prefix: string, op: string, body: unknown, timeout = 10_000): Promise<Msg> {
  return nc.request(`${prefix}.v1.lock.${op}`, json(body), { timeout });
}

async function waitersNow(nc: NatsConnection, prefix: string): Promise<number> {
  const reply = await request(nc, prefix, "get", { name: QUEUED });
  return reply.json<{ waiters?: number }>().waiters ?? 0;
}

/** p50 of acquire+release pairs on locks nobody waits for, 2 workers for {@link P50_WINDOW_MS}. */
async function otherLocksP50(
  nc: NatsConnection,
  prefix: string,
  tag: string,
): Promise<{ p50Ms: number; pairs: number; failed: number; failures: Record<string, number> }> {
  const samples: number[] = [];
  let failed = 0;
  const failures: Record<string, number> = {};
  const until = performance.now() + P50_WINDOW_MS;
  await Promise.all(
    [0, 1].map(async (worker) => {
      // A name per pair: a pair that fails leaves no lease behind for the next one to meet.
      for (let k = 0; performance.now() < until; k++) {
        const name = `other-${tag}-${worker}-${k}`;
        const t0 = performance.now();
        try {
          const acquired = await request(nc, prefix, "acquire", { name, owner: "bench", ttlMs: 30_000 });
          if (!succeeded(acquired)) throw new Error(acquired.string());
          const etag = acquired.json<{ lease: { etag: string } }>().lease.etag;
          const released = await request(nc, prefix, "release", { name, etag });
          if (!succeeded(released)) throw new Error(released.string());
          samples.push(performance.now() - t0);
        } catch (e) {
          failed++;
          const why = (e instanceof Error ? e.message : String(e)).slice(0, 120);
          failures[why] = (failures[why] ?? 0) + 1;
        }
      }
    }),
  );
  return { p50Ms: round(quantile(samples, 0.5), 2), pairs: samples.length, failed, failures };
}

/** The waiting acquires sent, and the grants they got, in the order they came. */
class Waiters {
  sent = 0;
  refused = 0;
  /** Why joins were refused: error code (or the client's exception), counted. */
  readonly refusals: Record<string, number> = {};
  readonly grants: { atMs: number; etag: string }[] = [];
  private notify: (() => void) | undefined;
  /** Each waiter's session, by its number, when waiters join under sessions. */
  private readonly sessions: string[] = [];

  constructor(
    private readonly conns: readonly NatsConnection[],
    private readonly prefix: string,
    private readonly underSessions: boolean,
  ) {}

  /** Opens the sessions of the waiters up to `count` (none without sessions), 100 at a time. */
  async prepare(count: number): Promise<void> {
    if (!this.underSessions) return;
    while (this.sessions.length < count) {
      const from = this.sessions.length;
      const ids = await Promise.all(
        Array.from({ length: Math.min(100, count - from) }, async (_, k) => {
          const i = from + k;
          const nc = this.conns[i % this.conns.length]!;
          const opened = await nc.request(`${this.prefix}.v1.session.open`, json({ owner: `w${i}`, ttlMs: WAIT_MS }), { timeout: 10_000 });
          const id = opened.json<{ session?: { id: string } }>().session?.id;
          if (id === undefined) throw new Error(`session.open: ${opened.string()}`);
          return id;
        }),
      );
      this.sessions.push(...ids);
    }
  }

  join(): void {
    const i = this.sent++;
    const nc = this.conns[i % this.conns.length]!;
    const session = this.underSessions ? { session: this.sessions[i]! } : {};
    void request(nc, this.prefix, "acquire", { name: QUEUED, owner: `w${i}`, waitMs: WAIT_MS, ...session }, MAX_MS).then(
      (reply) => {
        if (succeeded(reply)) {
          this.grants.push({ atMs: performance.now(), etag: reply.json<{ lease: { etag: string } }>().lease.etag });
          this.notify?.();
        } else this.refuse(reply.json<{ error?: { code?: string } }>().error?.code ?? "error");
      },
      (e: unknown) => this.refuse(e instanceof Error ? e.message : String(e)),
    );
  }

  private refuse(why: string): void {
    this.refused++;
    this.refusals[why] = (this.refusals[why] ?? 0) + 1;
  }

  /** The next grant after the first `seen`. */
  async grant(seen: number, timeoutMs: number): Promise<{ atMs: number; etag: string } | undefined> {
    const deadline = performance.now() + timeoutMs;
    while (this.grants.length <= seen && performance.now() < deadline) {
      await Promise.race([new Promise<void>((resolve) => (this.notify = resolve)), sleep(50)]);
    }
    return this.grants[seen];
  }
}

/** Joins until `target` were sent, `chunk` at a time, each chunk counted by lock.get before the next; false past the deadline. */
async function joinUpTo(
  nc: NatsConnection,
  prefix: string,
  waiters: Waiters,
  target: number,
  chunk: number,
  deadline: number,
  pollMs = 10,
): Promise<boolean> {
  while (waiters.sent < target) {
    const next = Math.min(target, waiters.sent + chunk);
    await waiters.prepare(next);
    while (waiters.sent < next) waiters.join();
    for (;;) {
      if (performance.now() > deadline) return false;
      const counted = await waitersNow(nc, prefix).catch(() => -1);
      if (counted >= waiters.sent - waiters.refused) break;
      await sleep(pollMs);
    }
  }
  return true;
}

/** What the phases need of the bench. */
interface BenchLike {
  readonly nats: { readonly url: string };
  connect(name: string): Promise<NatsConnection>;
  progress(line: string): void;
}

/** Phases 1 to 4 on two fresh services. */
async function queueFigures(bench: BenchLike, system: System, settings: Settings) {
  const prefix = `bq${randomUUID().slice(0, 8)}`;
  const nc = await bench.connect(`bench-${system.name}`);
  const t0 = performance.now();
  const a = spawnServe(system, bench.nats.url, prefix);
  await firstAnswer(nc, `${prefix}.v1.lock.get`, { name: "x" }, t0, a.child);
  const b = spawnServe(system, bench.nats.url, prefix);
  const services = [a, b];
  try {
    // Both instances answer the service framework's ping before anything is measured.
    for (;;) {
      const pings = await nc.requestMany("$SRV.PING.leasehold", undefined, { strategy: "stall", stall: 300, maxWait: 2000 });
      let n = 0;
      for await (const _ of pings) n++;
      if (n >= 2) break;
      if (b.child.exitCode !== null) throw new Error(`second service exited: ${b.stderr}`);
    }
    const pids = services.map((s) => s.child.pid!);
    const cpu = () => pids.reduce((sum, pid) => sum + threadCpuSeconds(pid), 0);

    // 1: other locks, no waiters anywhere. With waiters under sessions, a session is opened first: once any session exists, every
    // lock command reads the sessions caught up, which both windows then pay alike.
    if (settings.sessions) await nc.request(`${prefix}.v1.session.open`, json({ owner: "bench", ttlMs: WAIT_MS }), { timeout: 10_000 });
    bench.progress(`${system.name}: other locks without waiters`);
    await otherLocksP50(nc, prefix, "warm-up");
    const idle = await otherLocksP50(nc, prefix, "idle");

    // 2: waiters join.
    const holder = await request(nc, prefix, "acquire", { name: QUEUED, owner: "holder", ttlMs: MAX_MS });
    if (!succeeded(holder)) throw new Error(`holder: ${holder.string()}`);
    let etag = holder.json<{ lease: { etag: string } }>().lease.etag;
    const conns = await Promise.all([0, 1, 2, 3].map((i) => bench.connect(`waiters-${system.name}-${i}`)));
    const waiters = new Waiters(conns, prefix, settings.sessions);
    const deadline = performance.now() + JOIN_DEADLINE_MS;
    const cpuPerJoinMs: Record<string, number | null> = {};
    let reached = true;
    for (const at of CPU_AT) {
      if (at + CPU_BATCH > settings.waiters) break;
      reached &&= await joinUpTo(nc, prefix, waiters, at, 100, deadline);
      if (!reached) break;
      // The batch's sessions are opened first: their CPU is not the joins'.
      await waiters.prepare(at + CPU_BATCH);
      const before = cpu();
      const refusedBefore = waiters.refused;
      // The whole batch at once: the lock.get polls that count it are few.
      reached &&= await joinUpTo(nc, prefix, waiters, at + CPU_BATCH, CPU_BATCH, deadline, 50);
      const joined = CPU_BATCH - (waiters.refused - refusedBefore);
      cpuPerJoinMs[String(at)] = reached && joined > 0 ? round(((cpu() - before) * 1000) / joined, 3) : null;
      bench.progress(`${system.name}: CPU per join from ${at} waiters: ${cpuPerJoinMs[String(at)]} ms`);
    }
    if (reached) reached = await joinUpTo(nc, prefix, waiters, settings.waiters, 100, deadline);
    const parked = await waitersNow(nc, prefix).catch(() => -1);
    const joinRefusals = { ...waiters.refusals };
    bench.progress(`${system.name}: ${parked} waiters parked (${waiters.refused} joins refused)${reached ? "" : ", join deadline passed"}`);

    // 3: other locks with the waiters parked.
    const busy = await otherLocksP50(nc, prefix, "busy");

    // 4: handovers down the queue.
    const handoverMs: number[] = [];
    for (let h = 0; h < settings.handovers; h++) {
      const sentAt = performance.now();
      const released = await request(nc, prefix, "release", { name: QUEUED, etag });
      if (!succeeded(released)) {
        const now = await request(nc, prefix, "get", { name: QUEUED });
        throw new Error(
          `release ${h}: ${released.string()}; the lock: ${now.string()}; grants ${JSON.stringify(waiters.grants.slice(0, h + 2))}; refusals ${JSON.stringify(waiters.refusals)}`,
        );
      }
      const grant = await waiters.grant(h, 10_000);
      if (grant === undefined) {
        handoverMs.push(Infinity);
        break;
      }
      handoverMs.push(round(grant.atMs - sentAt, 1));
      etag = grant.etag;
    }
    return {
      system: system.name,
      idleP50Ms: idle.p50Ms,
      idlePairs: idle.pairs,
      parked,
      joinsRefused: waiters.refused,
      refusals: joinRefusals,
      busyP50Ms: busy.p50Ms,
      busyPairs: busy.pairs,
      busyFailed: busy.failed,
      busyFailures: busy.failures,
      idleFailed: idle.failed,
      p50Ratio: round(busy.p50Ms / idle.p50Ms, 2),
      cpuPerJoinMs,
      cpuRatio: cpuPerJoinMs["1000"] != null && cpuPerJoinMs["100"] != null ? round(cpuPerJoinMs["1000"] / cpuPerJoinMs["100"], 2) : null,
      handoverMaxMs: handoverMs.length === 0 ? null : Math.max(...handoverMs),
      handoverMedianMs: handoverMs.length === 0 ? null : round(median(handoverMs), 1),
      handovers: handoverMs.length,
    };
  } finally {
    await Promise.all(services.map((s) => stopService(s)));
  }
}

/** RSS of a fresh service before and 5 s after a flood of `loads` host loads for new host names. */
async function floodFigures(bench: BenchLike, system: System, loads: number) {
  const prefix = `bq${randomUUID().slice(0, 8)}`;
  const nc = await bench.connect(`bench-flood-${system.name}`);
  const service = spawnServe(system, bench.nats.url, prefix);
  try {
    await firstAnswer(nc, `${prefix}.v1.lock.get`, { name: "x" }, performance.now(), service.child);
    await sleep(2000);
    const pid = service.child.pid!;
    bench.progress(`${system.name}: ${loads} host loads for new host names`);
    const rssBeforeMb = rssMb(pid);
    const payload = json({ load: 1 });
    for (let i = 0; i < loads;) {
      const end = Math.min(loads, i + 10_000);
      for (; i < end; i++) nc.publish(`${prefix}.loads.flood-${i}`, payload);
      // A request after the loads, from the same connection, is answered once the service took them.
      await nc.request(`${prefix}.v1.host.list`, json({}), { timeout: 30_000 });
    }
    await sleep(5000);
    const rssAfterMb = rssMb(pid);
    return { rssBeforeMb, rssAfterMb, rssGrowthMb: round(rssAfterMb - rssBeforeMb, 1) };
  } finally {
    await stopService(service);
  }
}

async function main(): Promise<void> {
  const settings = parse();
  await withBench({ noAsyncTraces: true, waitForQuiet: false }, async (bench) => {
    const rows = [];
    const order = Array.from({ length: settings.repeat }, (_, r) => alternate(settings.systems, r + 1)).flat();
    for (const [i, system] of order.entries()) {
      bench.progress(`run ${i + 1}: ${system.name} (${system.cli})`);
      const queue = await queueFigures(bench, system, settings);
      rows.push({ ...queue, ...(settings.sessions ? {} : await floodFigures(bench, system, settings.loads)) });
    }
    if (settings.json) {
      printJson({ settings: { ...settings, systems: settings.systems.map((s) => s.name) }, machine: bench.machine, rows });
      return;
    }
    console.log(
      markdownTable(
        [
          "system",
          "RSS growth, MB (<= 50)",
          "other locks p50 idle / with waiters, ms",
          "ratio (<= 2)",
          "waiters parked",
          "CPU per join at 100 / 1,000, ms",
          "ratio (<= 1.5)",
          "handover median / max, ms (<= 50)",
        ],
        rows.map((r) => [
          r.system,
          "rssGrowthMb" in r ? (r.rssGrowthMb ?? "–") : "–",
          `${r.idleP50Ms} / ${r.busyP50Ms}`,
          r.p50Ratio,
          `${r.parked} (${r.joinsRefused} refused)`,
          `${r.cpuPerJoinMs["100"] ?? "–"} / ${r.cpuPerJoinMs["1000"] ?? "–"}`,
          r.cpuRatio ?? "–",
          `${r.handoverMedianMs ?? "–"} / ${r.handoverMaxMs ?? "–"} (${r.handovers})`,
        ]),
      ),
    );
  });
}

runBench(main);
