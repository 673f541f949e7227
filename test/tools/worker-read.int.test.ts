/**
 * `replay` and `audit` on two threads (src/tools/worker-read.ts) answer
 * exactly what the one-thread path answers, on the same stream read from a
 * real nats-server: a simulated history of every kind (several batches of
 * 4,096 messages) followed by the crafted rule breaks, so the audit has
 * violations to report. The replay view and its rendering are compared as
 * text; the audit's violations, progress calls and summary (but its elapsed
 * time) too.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { type StoredMessage } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { auditInWorker, replayInWorker } from "../../src/tools/worker-read.ts";
import { auditSource, type AuditOptions, type AuditProgress, type AuditSummary, type Violation } from "../../src/tools/audit.ts";
import { foldSource, replayInstant, replayView, type ReplayFilter, type ReplayRange } from "../../src/tools/replay.ts";
import { logSource, natsSource, type StreamSource } from "../../src/tools/stream-reader.ts";
import { renderReplay } from "../../src/tools/replay-render.ts";
import { connectNats, natsUrl, uniquePrefix } from "../support/nats.ts";
import { publishRaw, runCli } from "./support/cli.ts";
import { CRAFT_AUDIT, scenarios } from "./support/violations.ts";
import { simulateWorkload } from "./support/workload.ts";

const SIMULATED = 10_000;

let nc: NatsConnection;
let subjects: Subjects;
/** Sequence and stored time of every message, in order. */
let stored: { seq: number; time: number }[];

beforeAll(async () => {
  nc = await connectNats();
  const prefix = uniquePrefix();
  subjects = new Subjects(prefix);
  const sim = await simulateWorkload({ events: SIMULATED, seed: 11 });
  const from = `${sim.subjects.prefix}.events.`;
  const simulated = sim.log.messages
    .slice(0, SIMULATED)
    .map((m) => ({ subject: `${prefix}.events.${m.subject.slice(from.length)}`, payload: m.payload }));
  const crafted = scenarios("worker").flatMap((s) => s.messages.map((m) => ({ subject: m.subject(subjects), payload: m.payload })));
  await publishRaw(nc, prefix, [...simulated, ...crafted]);
  stored = [];
  await natsSource(nc, subjects).read({}, (m) => void stored.push({ seq: m.seq, time: m.time }));
  expect(stored.length).toBe(SIMULATED + crafted.length);
}, 120_000);

afterAll(async () => {
  await nc.close();
});

/** The replay the one-thread path gives, as the command printed it before the worker. */
async function replayOnOneThread(range: ReplayRange, filter: Omit<ReplayFilter, "changed">, now: number) {
  const { fold, changed } = await foldSource(natsSource(nc, subjects), subjects, range);
  return replayView(fold, replayInstant(fold, range, now), { ...filter, changed });
}

/** Everything an audit reports, in order, and its summary without the elapsed time. */
async function auditWith(
  run: (source: StreamSource, options: AuditOptions) => Promise<AuditSummary>,
  options: Omit<AuditOptions, "onViolation" | "onProgress">,
) {
  const reported: (Violation | AuditProgress)[] = [];
  const summary = await run(natsSource(nc, subjects), {
    ...options,
    onViolation: (v) => reported.push(v),
    onProgress: (p) => reported.push(p),
  });
  return { reported, summary: { ...summary, elapsedMs: 0 } };
}

describe("replay and audit on a worker thread", () => {
  it("replay gives the same view, and the same text, as the one-thread fold for every kind of range", async () => {
    const middle = stored[Math.floor(stored.length / 2)]!;
    const late = stored[stored.length - 40]!;
    const last = stored[stored.length - 1]!;
    const cases: { range: ReplayRange; filter: Omit<ReplayFilter, "changed"> }[] = [
      { range: { toSeq: last.seq }, filter: {} },
      { range: { toSeq: 4_097 }, filter: {} },
      { range: { toTime: middle.time }, filter: {} },
      { range: { toSeq: late.seq, sinceSeq: middle.seq }, filter: {} },
      { range: { toTime: last.time, sinceTime: middle.time }, filter: { kind: "lock" } },
      { range: { toSeq: last.seq }, filter: { kind: "route" } },
    ];
    for (const { range, filter } of cases) {
      const view = await replayInWorker(natsSource(nc, subjects), subjects, range, filter);
      const expected = await replayOnOneThread(range, filter, Date.now());
      expect(view.messages, JSON.stringify(range)).toBeGreaterThan(0);
      expect(JSON.stringify(view, null, 2), JSON.stringify(range)).toBe(JSON.stringify(expected, null, 2));
      expect(renderReplay(view, subjects.eventStream)).toEqual(renderReplay(expected, subjects.eventStream));
    }
    // --at stops the read at the first message after it: nothing later was folded.
    const atMiddle = await replayInWorker(natsSource(nc, subjects), subjects, { toTime: middle.time });
    expect(atMiddle.messages).toBe(stored.filter((m) => m.time <= middle.time).length);
  });

  it("audit reports the same violations and progress, in the same order, and the same summary", async () => {
    const middle = stored[Math.floor(stored.length / 2)]!;
    const last = stored[stored.length - 1]!;
    const settings: Omit<AuditOptions, "onViolation" | "onProgress">[] = [
      { ...CRAFT_AUDIT, progressEvery: 1_000 },
      { ...CRAFT_AUDIT, fromSeq: SIMULATED - 100, toSeq: last.seq - 30 },
      { ...CRAFT_AUDIT, fromTime: middle.time, toTime: last.time },
    ];
    for (const options of settings) {
      const onWorker = await auditWith((source, o) => auditInWorker(source, subjects, o, undefined, { split: false }), options);
      const onTwoWorkers = await auditWith((source, o) => auditInWorker(source, subjects, o, undefined, { split: true }), options);
      const onOneThread = await auditWith((source, o) => auditSource(source, subjects, o), options);
      expect(onTwoWorkers, JSON.stringify(options)).toEqual(onOneThread);
      expect(onWorker.summary.violations, JSON.stringify(options)).toBeGreaterThan(0);
      expect(onWorker.reported, JSON.stringify(options)).toEqual(onOneThread.reported);
      expect(onWorker.summary, JSON.stringify(options)).toEqual(onOneThread.summary);
    }
  });

  it("fails with the read's error when the stream fails mid-read (the worker is stopped)", async () => {
    const failing: StreamSource = {
      lastSeq: () => Promise.resolve(10_000),
      async read(_range, visit) {
        const payload = new TextEncoder().encode("{}");
        for (let seq = 1; seq <= 5_000; seq++)
          visit({ seq, subject: subjects.event("lock", "a"), payload, time: 0 } satisfies StoredMessage);
        await Promise.resolve();
        throw new Error("the stream read stalled");
      },
    };
    await expect(replayInWorker(failing, subjects)).rejects.toThrow("the stream read stalled");
    await expect(auditInWorker(failing, subjects, CRAFT_AUDIT, undefined, { split: false })).rejects.toThrow("the stream read stalled");
    // Split over two workers, both are stopped alike.
    await expect(auditInWorker(failing, subjects, CRAFT_AUDIT, undefined, { split: true })).rejects.toThrow("the stream read stalled");
  });

  it("the commands print the same with LEASEHOLD_TOOLS_THREADS=2 (the worker) as with 1", async () => {
    const last = stored[stored.length - 1]!;
    const oneThread = { LEASEHOLD_TOOLS_THREADS: "1" };
    const twoThreads = { LEASEHOLD_TOOLS_THREADS: "2" };
    const replay = ["replay", "--nats", natsUrl(), "--prefix", subjects.prefix, "--seq", String(last.seq - 7)];
    const [oneReplay, twoReplay] = await Promise.all([runCli(replay, oneThread), runCli(replay, twoThreads)]);
    expect(oneReplay.code, oneReplay.stderr).toBe(0);
    expect(twoReplay.code, twoReplay.stderr).toBe(0);
    expect(twoReplay.stdout).toBe(oneReplay.stdout);

    const audit = ["audit", "--json", "--nats", natsUrl(), "--prefix", subjects.prefix, "--cooldown-ms", String(CRAFT_AUDIT.cooldownMs)];
    const [oneAudit, twoAudit] = await Promise.all([runCli(audit, oneThread), runCli(audit, twoThreads)]);
    expect(oneAudit.code, oneAudit.stderr).toBe(1);
    expect(twoAudit.code, twoAudit.stderr).toBe(1);
    // Only the summary's elapsed time may differ.
    const withoutElapsed = (stdout: string) => stdout.replace(/"elapsedMs":\d+/, '"elapsedMs":0');
    expect(withoutElapsed(twoAudit.stdout)).toBe(withoutElapsed(oneAudit.stdout));
    expect(oneAudit.stdout.split("\n").length).toBeGreaterThan(5);
  });

  it("decodes names beyond ASCII, and bytes that are not UTF-8, as the one-thread path does", async () => {
    // Payloads are copied into a batch's buffer and cut out again by offset: a character of several bytes must survive that.
    const encoder = new TextEncoder();
    const log = new MemoryEventLog();
    const lockEvent = (name: string, owner: string, generation: number) =>
      JSON.stringify({
        type: "LockAcquired",
        v: 1,
        at: "2026-06-01T00:00:00.000Z",
        kind: "lock",
        id: name,
        data: { owner, generation, ttlMs: 1000, expiresAt: "2026-06-01T00:00:01.000Z", previousOwner: "" },
      });
    for (let i = 0; i < 5000; i++) {
      const payload = encoder.encode(lockEvent(`ascii-${i}`, "w#", 1));
      // Every 500th owner with a byte that is not UTF-8 for its #: not JSON, on either path.
      if (i % 500 === 0) payload[payload.indexOf(0x23)] = 0xff;
      log.appendRaw(subjects.event("lock", `ascii-${i}`), payload);
    }
    for (let i = 0; i < 3000; i++) {
      const name = `ключ-${i}`;
      const payload = encoder.encode(lockEvent(name, i % 2 === 0 ? "wörker" : "🔒", 1));
      // Every 99th cut short.
      log.appendRaw(subjects.event("lock", name), i % 99 === 0 ? payload.subarray(0, payload.length - 70) : payload);
    }
    const view = await replayInWorker(logSource(log), subjects);
    const { fold } = await foldSource(logSource(log), subjects);
    expect(JSON.stringify(view)).toBe(JSON.stringify(replayView(fold, Date.parse(view.at))));
    // With the subject table bounded below one batch's subjects, the second batch numbers them from 0 again.
    const renumbered = await replayInWorker(logSource(log), subjects, {}, {}, undefined, { maxSubjects: 100 });
    expect(JSON.stringify(renumbered)).toBe(JSON.stringify(replayView(fold, Date.parse(renumbered.at))));
    const owners = new Set(view.locks?.map((l) => l.recorded?.owner));
    expect(owners).toEqual(new Set([undefined, "w#", "wörker", "🔒"]));
    const audit = { ...CRAFT_AUDIT };
    const two = await auditWith((source, options) => auditInWorker(logSource(log), subjects, options), audit);
    const one = await auditWith((source, options) => auditSource(logSource(log), subjects, options), audit);
    expect(two).toEqual(one);
    const renumberedAudit = await auditWith(
      (source, options) => auditInWorker(logSource(log), subjects, options, undefined, { maxSubjects: 100 }),
      audit,
    );
    expect(renumberedAudit).toEqual(one);
    expect(one.summary.byRule["event-parses"]).toBe(10 + 31); // the bad bytes and the cut ones
  });

  it("refuses a LEASEHOLD_TOOLS_THREADS other than 1 or 2 in one line, exit 2, before connecting", async () => {
    for (const command of ["replay", "audit"]) {
      const run = await runCli([command, "--nats", "nats://127.0.0.1:1", "--prefix", subjects.prefix], { LEASEHOLD_TOOLS_THREADS: "3" });
      expect(run.code).toBe(2);
      expect(run.stderr.trim()).toBe(
        `leasehold ${command}: LEASEHOLD_TOOLS_THREADS is "3"; it takes 1 or 2 (unset: 2 on a multi-core machine for long reads)`,
      );
    }
  });
});
