/**
 * A start with no snapshot folds a long backlog on a worker thread
 * (src/projections/backlog-in-worker.ts, src/service/backlog-worker.ts). Held
 * to the one-thread fold: for any history (unparsable messages included),
 * on the in-memory log and on a real JetStream stream, the records, the
 * remembered replies and the sequence are the same; a worker that cannot
 * fold leaves the fold to this thread with a warning; and a service started
 * that way answers as the one that wrote the history.
 */
import { Writable } from "node:stream";
import fc from "fast-check";
import { pino, type Logger } from "pino";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { type EventLog } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { KindProjection } from "../../src/projections/kind-projection.ts";
import { MemoryProjectionSnapshotStore } from "../../src/projections/snapshot-stores.ts";
import { readSnapshot } from "../../src/projections/projection-snapshots.ts";
import { type KindFold } from "../../src/projections/kind-fold.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import type { LockState } from "../../src/lock/state.ts";
import { DEFAULTS, resolveConfig } from "../../src/config.ts";
import { startService, type RunningService } from "../../src/service/start-service.ts";
import { DEFAULT_SETTINGS, T0 } from "../support/lock-given.ts";
import { LockWriter } from "../support/lock-writer.ts";
import { call, connectNats, natsUrl, quietLogger, uniquePrefix } from "../support/nats.ts";

const WORKER = { entry: new URL("../../src/service/backlog-worker.ts", import.meta.url), settings: DEFAULTS, minSeq: 1 };
const NAMES = ["a", "b", "c", "d", "e", "f", "g"];
const logic = lockLogic(DEFAULT_SETTINGS);

/** A logger whose lines the test reads. */
function capturingLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: "info" }, sink), lines };
}

interface Setup {
  readonly log: EventLog;
  readonly subjects: Subjects;
  readonly worker?: typeof WORKER | undefined;
  readonly fold?: KindFold<LockState>;
  readonly logger?: Logger;
  readonly store?: MemoryProjectionSnapshotStore;
  /** The projection's clock (replies are judged past their horizon by it). */
  readonly now?: () => number;
}

function projection(s: Setup): KindProjection<LockState> {
  return new KindProjection({
    log: s.log,
    filter: s.subjects.eventsOfKind("lock"),
    fold: s.fold ?? logic,
    logger: s.logger ?? quietLogger,
    snapshots: s.store,
    // Replies past the horizon are dropped (all but the latest three): the worker must keep the same ones.
    replies: { horizonMs: 60_000, keepLatest: 3 },
    backlogWorker: s.worker,
    ...(s.now === undefined ? {} : { now: s.now }),
  });
}

/** Stops `first`, drops its snapshots, and starts another instance, which folds the backlog on the worker from sequence 1 on. */
async function startAgainWithoutSnapshots(first: RunningService, prefix: string) {
  await first.stop();
  const bucket = `OBJ_${new Subjects(prefix).projectionBucket}`;
  const { jetstreamManager } = await import("@nats-io/jetstream");
  await (await jetstreamManager(nc!)).streams.delete(bucket);
  const { logger, lines } = capturingLogger();
  const second = await startService({ nc: nc!, config: resolveConfig({ prefix, nats: natsUrl() }), logger, backlogWorkerMinSeq: 1 });
  return { second, lines };
}

/** Every record with where it stands, sorted by id. */
const recordsOf = (p: KindProjection<LockState>) =>
  [...p.entries()].map(([id]) => [id, p.record(id)] as const).sort(([a], [b]) => a.localeCompare(b));

/**
 * Starts one projection with the worker and one without over `log`, and
 * expects them equal; with `replies: "more"` the worker's may remember
 * replies the other judged past the horizon (never fewer).
 */
async function expectSameFold(setup: Setup, writer: LockWriter, replies: "same" | "more" = "same"): Promise<KindProjection<LockState>> {
  const onWorker = projection({ ...setup, worker: setup.worker ?? WORKER });
  const onThread = projection({ ...setup, worker: undefined, store: undefined, logger: undefined });
  await Promise.all([onWorker.start(), onThread.start()]);
  expect(recordsOf(onWorker)).toEqual(recordsOf(onThread));
  for (const msgId of writer.requests) {
    const kept = onThread.remembered(msgId);
    if (replies === "same" || kept !== undefined) expect(onWorker.remembered(msgId)).toEqual(kept);
  }
  // As many: the bytes differ, since this thread's fold holds the events a reply is rendered from, and the worker's part the replies.
  if (replies === "same") expect(onWorker.replies.entries).toBe(onThread.replies.entries);
  expect(onWorker.seq).toBe(onThread.seq);
  await onThread.stop();
  return onWorker;
}

/** Appends a message that is not an event (the fold marks its lock corrupt). */
async function appendGarbage(log: EventLog, subjects: Subjects, name: string): Promise<void> {
  const subject = subjects.event("lock", name);
  const last = await log.lastSubjectSeq(subject);
  await log.append(subject, new TextEncoder().encode(`{"not":"an event" ${name}`), {
    expectedLastSubjectSeq: last,
    msgId: `g-${name}-${last}`,
  });
}

let nc: NatsConnection | undefined;
afterEach(async () => {
  await nc?.drain();
  nc = undefined;
});

describe("a start's backlog folded on a worker thread", { timeout: 120_000 }, () => {
  it("equals the fold on this thread for any history, replies included (in-memory log)", async () => {
    const subjects = new Subjects("t");
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ name: fc.constantFrom(...NAMES), garbage: fc.boolean() }), { minLength: 1, maxLength: 60 }),
        async (ops) => {
          const log = new MemoryEventLog();
          const writer = new LockWriter(log, subjects);
          for (const op of ops) {
            if (op.garbage && op.name === "g") await appendGarbage(log, subjects, op.name);
            else await writer.next(op.name);
          }
          const p = await expectSameFold({ log, subjects }, writer);
          expect(p.startedFromSeq).toBe(await log.lastSubjectSeq(subjects.eventsOfKind("lock")));
          await p.stop();
        },
      ),
      { numRuns: 8 },
    );
  });

  it("equals the fold on this thread on a JetStream stream, and its result is saved as a snapshot base at once", async () => {
    nc = await connectNats();
    const subjects = new Subjects(uniquePrefix());
    const log = await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 60_000 });
    const writer = new LockWriter(log, subjects);
    for (let i = 0; i < 400; i++) await writer.next(`lock-${i % 40}`);
    await appendGarbage(log, subjects, "lock-3");
    // The last events are acquires: their replies are the latest, kept whatever the clock says.
    for (let i = 0; i < 5; i++) await writer.next(`lock-${i}`);
    // Event instants are T0 + 1..405 ms. At T0 + 60.2 s about half the replies are within the 60 s horizon, all
    // stored instants are too, so the worker is handed every message id; ten minutes from now none is, and it is
    // handed only those of the latest three messages (the rest are not read).
    for (const now of [() => T0 + 60_200, () => Date.now() + 600_000]) {
      const { logger, lines } = capturingLogger();
      const store = new MemoryProjectionSnapshotStore();
      const p = await expectSameFold({ log, subjects, logger, store, now }, writer);
      expect(lines.find((l) => l.msg === "projection backlog folded on a worker thread")).toMatchObject({
        kind: "lock",
        events: 406,
        ids: 40,
      });
      expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
      expect(p.replies.entries).toBeGreaterThanOrEqual(3);
      // Taken in as a snapshot would be, and saved at once as the base the worker encoded: every record, no save asked for.
      await vi.waitFor(async () => {
        const saved = await readSnapshot(store, "lock", logic.foldVersion);
        expect(typeof saved === "object" && saved.manifest.parts.map((part) => part.records)).toEqual([40]);
      });
      const saved = await readSnapshot(store, "lock", logic.foldVersion);
      // The latest replies, as a base this thread saves keeps them.
      expect(typeof saved === "object" && saved.parts[0]!.replies.length).toBe(p.replies.entries);
      // Nothing changed since: the next save is an empty delta on that base.
      await p.saveSnapshot();
      const next = await readSnapshot(store, "lock", logic.foldVersion);
      expect(typeof next === "object" && next.manifest.parts.map((part) => part.records)).toEqual([40, 0]);
      await p.stop();
    }
  });

  it("leaves to the follower what a read that ended early did not hand over (a consumer on a lagging replica)", async () => {
    const subjects = new Subjects("t");
    /** A log whose scans end five messages short of the range asked for, as a replica behind the leader does. */
    class LaggingReplicaLog extends MemoryEventLog {
      override scan(...[range, visit]: Parameters<MemoryEventLog["scan"]>): Promise<void> {
        return super.scan({ ...range, toSeq: (range.toSeq ?? this.messages.length) - 5 }, visit);
      }
    }
    const log = new LaggingReplicaLog();
    const writer = new LockWriter(log, subjects);
    for (let i = 0; i < 40; i++) await writer.next(NAMES[i % NAMES.length]!);
    // The worker judges the horizon by how many messages its read had left: it keeps the replies of the
    // three before the read's end, which the whole fold counts as older than its last three.
    const p = await expectSameFold({ log, subjects }, writer, "more");
    expect(p.startedFromSeq).toBe(35);
    expect(p.backlogOnWorker).toBe(true);
    await p.stop();
  });

  it("is left to this thread, with a warning, when the worker cannot fold (its fold is another version)", async () => {
    const subjects = new Subjects("t");
    const log = new MemoryEventLog();
    const writer = new LockWriter(log, subjects);
    for (let i = 0; i < 30; i++) await writer.next(NAMES[i % NAMES.length]!);
    const { logger, lines } = capturingLogger();
    const p = await expectSameFold({ log, subjects, logger, fold: { ...logic, foldVersion: logic.foldVersion + 1000 } }, writer);
    const warning = lines.find((l) => l.msg === "backlog not folded on a worker thread; folding it on this one");
    expect((warning?.err as { message?: string } | undefined)?.message).toMatch(/folds lock at version \d+, the projection at \d+/);
    expect(p.startedFromSeq).toBe(0);
    await p.stop();
  });

  it("lets a service started over another's history answer as that one does", async () => {
    const prefix = uniquePrefix();
    const config = resolveConfig({ prefix, nats: natsUrl() });
    nc = await connectNats();
    const first = await startService({ nc, config, logger: quietLogger });
    const leases: { etag: string }[] = [];
    for (let i = 0; i < 20; i++) {
      const reply = await call<{ lease: { etag: string } }>(nc, prefix, "lock.acquire", { name: `n${i}`, owner: `o${i}`, ttlMs: 30_000 });
      leases.push(reply.body.lease);
    }
    expect((await call(nc, prefix, "lock.release", { name: "n0", etag: leases[0]!.etag })).status).toBeUndefined();
    const { second, lines } = await startAgainWithoutSnapshots(first, prefix);
    try {
      expect(lines.find((l) => l.msg === "projection backlog folded on a worker thread" && l.kind === "lock")).toBeDefined();
      expect((await call(nc, prefix, "lock.get", { name: "n0" })).body).toMatchObject({ lease: null });
      for (let i = 1; i < 20; i++)
        expect((await call<{ lease: unknown }>(nc, prefix, "lock.get", { name: `n${i}` })).body.lease).toEqual(leases[i]);
      // Held: a second acquire is refused, as by the instance that granted it.
      expect((await call(nc, prefix, "lock.acquire", { name: "n5", owner: "other", ttlMs: 30_000 })).code).toBe("LEASE_EXISTS");
    } finally {
      await second.stop();
    }
  });

  it("folds proxies there too, with their recent acquisitions: a repeated acquire is answered as the first", async () => {
    const prefix = uniquePrefix();
    const config = resolveConfig({ prefix, nats: natsUrl() });
    nc = await connectNats();
    const first = await startService({ nc, config, logger: quietLogger });
    for (const proxy of ["p1", "p2"])
      await call(nc, prefix, "proxy.register", { proxy, maxLeases: 5, latencyMs: 1, labels: {}, healthy: true });
    const acquires = Array.from({ length: 6 }, (_, i) => ({ ttlMs: 30_000, target: `t${i % 2}`, labels: {}, requestId: `acq-${i}` }));
    const granted: unknown[] = [];
    for (const body of acquires) granted.push((await call(nc, prefix, "proxy.acquire", body)).body);
    const leaseId = (granted[0] as { lease: { id: string } }).lease.id;
    expect((await call(nc, prefix, "proxy.release", { leaseId })).code).toBeUndefined();
    const listed = (await call(nc, prefix, "proxy.list", {})).body;
    const { second, lines } = await startAgainWithoutSnapshots(first, prefix);
    try {
      expect(lines.find((l) => l.msg === "projection backlog folded on a worker thread" && l.kind === "proxy")).toBeDefined();
      expect((await call(nc, prefix, "proxy.list", {})).body).toEqual(listed);
      for (const [i, body] of acquires.entries()) expect((await call(nc, prefix, "proxy.acquire", body)).body).toEqual(granted[i]);
      // The released lease is known as this proxy's (its index was rebuilt from the states): released again, it is gone.
      expect((await call(nc, prefix, "proxy.release", { leaseId })).code).toBeUndefined();
    } finally {
      await second.stop();
    }
  });
});
