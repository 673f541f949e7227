/**
 * Restart and memory benchmark: how long a fresh service takes to be ready
 * (answering, and caught up with the stream) over 1,000,000 lock events of
 * 100,000 locks, with and without a projection snapshot; how fast the fold
 * runs against a raw ordered-consumer read of the same stream; and the RSS of
 * the service's process, ready over that stream and with 100,000 live lock
 * leases held.
 *
 *   npx tsx bench/restart.ts [--events 1000000] [--locks 100000] [--held 100000]
 *                            [--repeats 2] [--parts ready,memory] [--data-dir DIR] [--rebuild] [--cli] [--profile-dir DIR] [--json]
 *
 * The stream is written once by direct JetStream publishes of valid lock
 * events (each lock: acquire and release, generation after generation, so
 * no lease is live at the end), each with a `requestId` and the
 * `Nats-Msg-Id` the service would give it, into a nats-server whose store is kept in
 * `--data-dir` (default `<tmp>/leasehold-bench-restart`) and reused by later
 * runs. Each service runs alone in a child process (bench/restart-service.ts),
 * so its RSS (read from /proc) is the service's and nothing else's.
 *
 * With `--cli` each start is `leasehold serve` as a user runs it
 * (bin/leasehold.js: the built dist/ when it is current, so `npm run build`
 * first), not the sources through tsx; its startService figure is then the
 * `ms` of the service's "projections caught up with the stream" log line
 * (the kinds' start alone, after the connection), and it prints no stop
 * figure.
 */
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { startLocalNatsServer } from "../src/cluster/local-cluster.ts";
import { encodeEvent } from "../src/events/envelope.ts";
import { JetStreamEventLog } from "../src/events/jetstream-event-log.ts";
import { Subjects } from "../src/contract/subjects.ts";
import { lockHistoryEvent } from "./lock-history.ts";
import { firstAnswer, heldLocksMemory, rssMb, serviceNodeArgs, spawnService, stopService } from "./service-process.ts";
import {
  machineInfo,
  markdownTable,
  median,
  parseOwnArgs,
  positiveInt,
  printJson,
  round,
  runBench,
  UsageError,
  waitForQuietMachine,
} from "./support.ts";

/** The stream's prefix (rbench2: every event carries a requestId and a Nats-Msg-Id, as the service writes them). */
const PREFIX = "rbench2";

interface Settings {
  readonly events: number;
  readonly locks: number;
  readonly held: number;
  readonly repeats: number;
  readonly dataDir: string;
  readonly rebuild: boolean;
  /** Start `leasehold serve` (bin/leasehold.js) instead of bench/restart-service.ts through tsx. */
  readonly cli: boolean;
  /** `ready` (starts over the big stream, raw read) and/or `memory` (held leases). */
  readonly parts: readonly string[];
  /** Where each service child writes a `--cpu-prof` profile; none when undefined. */
  readonly profileDir: string | undefined;
  readonly json: boolean;
}

function parseSettings(): Settings {
  const values = parseOwnArgs(
    "usage: npx tsx bench/restart.ts [--events 1000000] [--locks 100000] [--held 100000] [--repeats 2] [--parts ready,memory] [--data-dir DIR] [--rebuild] [--cli] [--profile-dir DIR] [--json]",
    {
      events: { type: "string", default: "1000000" },
      locks: { type: "string", default: "100000" },
      held: { type: "string", default: "100000" },
      repeats: { type: "string", default: "2" },
      "data-dir": { type: "string", default: join(tmpdir(), "leasehold-bench-restart") },
      rebuild: { type: "boolean", default: false },
      cli: { type: "boolean", default: false },
      parts: { type: "string", default: "ready,memory" },
      "profile-dir": { type: "string" },
      json: { type: "boolean", default: false },
    },
  );
  const events = positiveInt("events", values.events);
  const locks = positiveInt("locks", values.locks);
  if (events % (2 * locks) !== 0) throw new UsageError("--events must be a multiple of twice --locks (acquire + release per generation)");
  return {
    events,
    locks,
    held: positiveInt("held", values.held),
    repeats: positiveInt("repeats", values.repeats),
    dataDir: values["data-dir"],
    rebuild: values.rebuild,
    cli: values.cli,
    parts: values.parts.split(",").map((p) => p.trim()),
    profileDir: values["profile-dir"],
    json: values.json,
  };
}

const progress = (line: string) => process.stderr.write(`${line}\n`);

/**
 * Writes `events` lock events over `locks` locks: generation g of every lock
 * is acquired, then released, round after round, so the histories interleave
 * as a busy service's would. Publishes are pipelined (a window of acks).
 */
async function writeStream(js: JetStreamClient, subjects: Subjects, events: number, locks: number): Promise<number> {
  const t0 = performance.now();
  const rounds = events / (2 * locks);
  const window = 4096;
  const pending = new Set<Promise<unknown>>();
  let written = 0;
  for (let g = 1; g <= rounds; g++) {
    for (const type of ["LockAcquired", "LockReleased"] as const) {
      const at = new Date();
      for (let i = 0; i < locks; i++) {
        const { subject, event, msgId: msgID } = lockHistoryEvent(subjects, type, i, g, written, at);
        const p = js.publish(subject, encodeEvent(event), { timeout: 30_000, msgID });
        pending.add(p);
        void p.finally(() => pending.delete(p));
        if (pending.size >= window) await Promise.race(pending);
        if (++written % 100_000 === 0) progress(`wrote ${written} events`);
      }
    }
  }
  await Promise.all(pending);
  return performance.now() - t0;
}

/** A raw read of the lock events: an ordered consumer with the follower's filter and batch, touching each payload. */
async function rawRead(js: JetStreamClient, stream: string, filter: string, lastSeq: number): Promise<{ ms: number; messages: number }> {
  const t0 = performance.now();
  const consumer = await js.consumers.get(stream, { filter_subjects: filter, deliver_policy: DeliverPolicy.All });
  const messages = await consumer.consume({ max_messages: 1024 });
  let n = 0;
  let bytes = 0;
  for await (const m of messages) {
    n++;
    bytes += m.data.length;
    if (m.seq >= lastSeq) break;
  }
  await messages.close();
  if (bytes === 0) throw new Error("read nothing");
  return { ms: performance.now() - t0, messages: n };
}

/** One start of a service over the big stream: ready figures, RSS, stop. */
interface StartRun {
  readonly snapshot: "none" | "present";
  readonly repeat: number;
  /** Spawn to the first successful `lock.get` (includes Node start-up, and tsx's without `--cli`). */
  readonly spawnToLockGetMs: number;
  /** Spawn to the first successful `host.list`. */
  readonly spawnToHostListMs: number;
  /** `startService` alone, in the child (resolves once every projection caught up). */
  readonly startServiceMs: number | undefined;
  readonly projections: unknown;
  readonly rssReadyMb: number;
  readonly stopMs: number | undefined;
  readonly exitCode: number | null;
  readonly warnings: string;
  /** The messages the service logged (with `--cli`, at info): how its start went (a snapshot loaded or ignored, saves). */
  readonly log: readonly string[];
}

/**
 * The start figures of a child's line: bench/restart-service.ts prints
 * `{startServiceMs, projections}`; `leasehold serve` logs the kinds' start as
 * "projections caught up with the stream" with `ms` and `projections`.
 */
function startFigures(line: Record<string, unknown>): { startServiceMs: unknown; projections: unknown } | undefined {
  if ("startServiceMs" in line) return { startServiceMs: line.startServiceMs, projections: line.projections };
  if (line.msg === "projections caught up with the stream") return { startServiceMs: line.ms, projections: line.projections };
  return undefined;
}

async function startOnce(
  cli: boolean,
  nc: NatsConnection,
  url: string,
  prefix: string,
  snapshot: StartRun["snapshot"],
  repeat: number,
): Promise<StartRun> {
  const t0 = performance.now();
  const service = spawnService(url, prefix, 30_000, cli, cli ? "info" : undefined);
  try {
    const spawnToLockGetMs = await firstAnswer(nc, `${prefix}.v1.lock.get`, { name: "lock-7" }, t0, service.child);
    const spawnToHostListMs = await firstAnswer(nc, `${prefix}.v1.host.list`, {}, t0, service.child);
    // Answering may come a moment before startService resolves (its last step starts the durable-command consumer).
    const deadline = performance.now() + 60_000;
    const startedLine = () => service.lines.map(startFigures).find((l) => l !== undefined);
    // `leasehold serve` stops its service (and saves the last snapshot the next start reads) only once startService
    // resolved and it logged "leasehold serving": a SIGTERM before that drains the connection under a save in flight.
    const serving = () => !cli || service.lines.some((l) => l.msg === "leasehold serving");
    while ((startedLine() === undefined || !serving()) && performance.now() < deadline && service.child.exitCode === null) await sleep(5);
    const started = startedLine();
    const rssReadyMb = rssMb(service.child.pid!);
    const stop = await stopService(service);
    return {
      snapshot,
      repeat,
      spawnToLockGetMs: round(spawnToLockGetMs),
      spawnToHostListMs: round(spawnToHostListMs),
      startServiceMs: started === undefined ? undefined : round(started.startServiceMs as number),
      projections: started?.projections,
      rssReadyMb,
      stopMs: stop.stopMs,
      exitCode: stop.exitCode,
      warnings: service.stderr.trim().slice(-600),
      log: service.lines.slice(-60).map(({ msg, kind, ms, seq, reason, err }) => JSON.stringify({ msg, kind, ms, seq, reason, err })),
    };
  } finally {
    if (service.child.exitCode === null) service.child.kill("SIGKILL");
  }
}

async function main(): Promise<void> {
  const settings = parseSettings();
  if (settings.profileDir !== undefined) serviceNodeArgs.push("--cpu-prof", "--cpu-prof-dir", settings.profileDir);
  const quiet = await waitForQuietMachine(progress);
  const server = await startLocalNatsServer({ dir: settings.dataDir });
  const url = server.urls[0]!;
  const nc = await connect({ servers: url, name: "restart-bench", noAsyncTraces: true });
  try {
    const subjects = new Subjects(PREFIX);
    const jsm = await jetstreamManager(nc, { timeout: 30_000 });
    const js = jetstream(nc, { timeout: 30_000 });
    let info = await jsm.streams.info(subjects.eventStream).catch(() => undefined);
    let writeMs: number | undefined;
    if (settings.rebuild || info === undefined || info.state.messages !== settings.events || info.state.last_seq !== settings.events) {
      if (info !== undefined) await jsm.streams.delete(subjects.eventStream);
      await jsm.streams.delete(`OBJ_${subjects.projectionBucket}`).catch(() => undefined);
      // Created by the event log's own code, so it is the stream the service would create.
      await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
      progress(`writing ${settings.events} events over ${settings.locks} locks`);
      writeMs = await writeStream(js, subjects, settings.events, settings.locks);
      progress(`wrote them in ${round(writeMs / 1000, 1)} s`);
      info = await jsm.streams.info(subjects.eventStream);
    } else {
      progress(`reusing the stream in ${settings.dataDir} (${info.state.messages} events)`);
    }
    const lastSeq = info.state.last_seq;
    const machine = machineInfo(nc.info?.version ?? "unknown");

    // Empty stream: what start-up costs before any history (Node, tsx, connection, setup).
    const emptyPrefix = `rbenchempty${randomUUID().slice(0, 8)}`;
    const empty = await startOnce(settings.cli, nc, url, emptyPrefix, "none", 0);
    // Its streams go, so the kept store does not gather one set per run.
    const emptySubjects = new Subjects(emptyPrefix);
    for (const stream of [emptySubjects.eventStream, emptySubjects.commandStream, `OBJ_${emptySubjects.projectionBucket}`])
      await jsm.streams.delete(stream).catch(() => undefined);
    progress(`empty stream: lock.get after ${empty.spawnToLockGetMs} ms, RSS ${empty.rssReadyMb} MB`);

    const raw: { ms: number; messages: number }[] = [];
    const starts: StartRun[] = [];
    for (let repeat = 1; repeat <= (settings.parts.includes("ready") ? settings.repeats : 0); repeat++) {
      raw.push(await rawRead(js, subjects.eventStream, subjects.eventsOfKind("lock"), lastSeq));
      progress(`raw read ${raw.at(-1)!.messages} in ${round(raw.at(-1)!.ms)} ms`);
      await jsm.streams.delete(`OBJ_${subjects.projectionBucket}`).catch(() => undefined);
      for (const snapshot of ["none", "present"] as const) {
        const run = await startOnce(settings.cli, nc, url, PREFIX, snapshot, repeat);
        starts.push(run);
        progress(
          `snapshot ${snapshot}: lock.get after ${run.spawnToLockGetMs} ms, host.list after ${run.spawnToHostListMs} ms, startService ${run.startServiceMs} ms, RSS ${run.rssReadyMb} MB, stop ${run.stopMs} ms exit ${run.exitCode}`,
        );
      }
    }
    const memory = settings.parts.includes("memory") ? await heldLocksMemory(nc, url, settings.held, progress, settings.cli) : undefined;
    if (memory !== undefined)
      progress(`held ${memory.held} leases (${memory.failed} failed): RSS ${memory.rssHeldMb} MB, 10 s later ${memory.rssHeld10sMb} MB`);

    const rawMs = median(raw.map((r) => r.ms));
    const of = (s: StartRun["snapshot"]) => starts.filter((r) => r.snapshot === s);
    const med = (rs: StartRun[], f: (r: StartRun) => number | undefined) =>
      round(median(rs.map(f).filter((v): v is number => v !== undefined)));
    const foldMs = med(of("none"), (r) => r.startServiceMs);
    const summary = {
      events: lastSeq,
      locks: settings.locks,
      rawReadMs: round(rawMs),
      rawEventsPerSec: round(lastSeq / (rawMs / 1000)),
      foldMsNoSnapshot: foldMs,
      foldEventsPerSec: round(lastSeq / (foldMs / 1000)),
      foldToRawRatio: round(rawMs / foldMs, 2),
      // Each repeat's first start (no snapshot) over the raw read measured just before it: median, min, max.
      foldToRawRatios: of("none").map((r, i) => round(r.startServiceMs === undefined ? Number.NaN : raw[i]!.ms / r.startServiceMs, 2)),
      rawReadMsMinMax: [round(Math.min(...raw.map((r) => r.ms))), round(Math.max(...raw.map((r) => r.ms)))],
      readyNoSnapshotMs: med(of("none"), (r) => r.spawnToHostListMs),
      readySnapshotMs: med(of("present"), (r) => r.spawnToHostListMs),
      startServiceSnapshotMs: med(of("present"), (r) => r.startServiceMs),
      readyEmptyStreamMs: empty.spawnToHostListMs,
      rssEmptyMb: empty.rssReadyMb,
      rssReadyOn1MMb: median(starts.map((r) => r.rssReadyMb)),
      rssHeldMb: memory?.rssHeldMb,
      rssHeld10sMb: memory?.rssHeld10sMb,
    };
    const result = { settings, machine, quiet, writeMs, summary, raw, empty, starts, memory };
    if (settings.json) {
      printJson(result);
      return;
    }
    process.stdout.write(
      [
        `node ${process.version}, load at start ${quiet.load1m} (waited ${round(quiet.waitedMs / 1000)} s), service: ${settings.cli ? "leasehold serve (bin/leasehold.js)" : "bench/restart-service.ts through tsx"}`,
        "",
        markdownTable(
          ["figure", "value"],
          Object.entries(summary).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : (v ?? "–")]),
        ),
        "",
        markdownTable(
          ["repeat", "snapshot", "spawn→lock.get ms", "spawn→host.list ms", "startService ms", "RSS ready MB", "stop ms", "exit"],
          starts.map((r) => [
            r.repeat,
            r.snapshot,
            r.spawnToLockGetMs,
            r.spawnToHostListMs,
            r.startServiceMs ?? "–",
            r.rssReadyMb,
            r.stopMs ?? "–",
            String(r.exitCode),
          ]),
        ),
        "",
        `held leases: ${memory === undefined ? "not measured" : JSON.stringify(memory)}`,
        "",
      ].join("\n"),
    );
  } finally {
    await nc.drain().catch(() => undefined);
    await server.stop();
  }
}

runBench(main);
