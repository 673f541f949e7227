/**
 * A kind's projection on the in-memory log: it folds what the stream holds,
 * restarts from its snapshots (and only from snapshots it can trust), keeps
 * remembered replies bounded, and bounds every wait.
 */
import { pino } from "pino";
import { describe, expect, it, vi } from "vitest";
import { encodeEvent, type EventEnvelope } from "../../src/events/envelope.ts";
import {
  LogUnavailableError,
  type FollowOptions,
  type Following,
  type StoredMessage,
  type StreamRange,
} from "../../src/events/event-log.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { KindProjection } from "../../src/projections/kind-projection.ts";
import {
  manifestName,
  partName,
  readSnapshot,
  type RestoredSnapshot,
  type SnapshotManifest,
} from "../../src/projections/projection-snapshots.ts";
import { MemoryProjectionSnapshotStore, type ProjectionSnapshotStore } from "../../src/projections/snapshot-stores.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import type { LockState } from "../../src/lock/state.ts";
import { DEFAULT_SETTINGS, T0 } from "../support/lock-given.ts";
import { withCaughtUp } from "../support/projections.ts";

const subjects = new Subjects("t");
const logic = lockLogic(DEFAULT_SETTINGS);

/** Records a warning's message so a test can see a snapshot was refused. */
function capturingLogger(warnings: string[]) {
  const logger = pino({ level: "warn" }, { write: (line: string) => void warnings.push((JSON.parse(line) as { msg: string }).msg) });
  return logger;
}

function projection(log: MemoryEventLog, snapshots?: ProjectionSnapshotStore, warnings: string[] = []): KindProjection<LockState> {
  return new KindProjection({
    log,
    filter: subjects.eventsOfKind("lock"),
    fold: logic,
    logger: capturingLogger(warnings),
    snapshots,
    opTimeoutMs: 200,
  });
}

/** Appends `n` acquire/release pairs on lock `name`, each acquire with a requestId. */
async function history(log: MemoryEventLog, name: string, n: number, from = 0): Promise<void> {
  const subject = subjects.event("lock", name);
  let seq = await log.lastSubjectSeq(subject);
  for (let i = from; i < from + n; i++) {
    const at = new Date(T0 + i).toISOString();
    const acquired: EventEnvelope = {
      type: "LockAcquired",
      v: 1,
      at,
      kind: "lock",
      id: name,
      requestId: `r${i}`,
      data: { owner: `o${i}`, generation: i + 1, ttlMs: 1000, expiresAt: new Date(T0 + i + 1000).toISOString(), previousOwner: "" },
    };
    seq = (await log.append(subject, encodeEvent(acquired), { expectedLastSubjectSeq: seq, msgId: `${subject}|acquire|r${i}` })).seq;
    const released: EventEnvelope = { type: "LockReleased", v: 1, at, kind: "lock", id: name, data: { owner: `o${i}`, generation: i + 1 } };
    seq = (await log.append(subject, encodeEvent(released), { expectedLastSubjectSeq: seq, msgId: `rel-${name}-${i}` })).seq;
  }
}

/** The in-memory log with a follower that hands over its backlog one message every `everyMs`, as a slow start would. */
class TricklingLog extends MemoryEventLog {
  constructor(private readonly everyMs: number) {
    super();
  }

  override async follow(
    fromSeq: number,
    onMessage: (message: StoredMessage) => void,
    options?: string | FollowOptions,
  ): Promise<Following> {
    const queue: StoredMessage[] = [];
    const timer = setInterval(() => {
      const next = queue.shift();
      if (next !== undefined) onMessage(next);
    }, this.everyMs);
    const following = await super.follow(fromSeq, (m) => queue.push(m), options);
    return {
      ...following,
      stop: () => {
        clearInterval(timer);
        return following.stop();
      },
    };
  }

  /** A start's catch-up read trickles too. */
  override async scan(range: StreamRange, visit: (message: StoredMessage) => boolean | void): Promise<void> {
    const messages: StoredMessage[] = [];
    await super.scan(range, (m) => void messages.push(m));
    for (const m of messages) {
      await new Promise((resolve) => setTimeout(resolve, this.everyMs));
      if (visit(m) === false) return;
    }
  }
}

describe("KindProjection", () => {
  it("folds the stream, then restarts from its snapshot and folds only the tail, to the same states", async () => {
    const log = new MemoryEventLog();
    const store = new MemoryProjectionSnapshotStore();
    await history(log, "a", 20);
    await history(log, "b", 5);
    const first = projection(log, store);
    await first.start();
    expect(first.get("a").generation).toBe(20);
    expect(first.record("b").seq).toBe(50);
    await first.stop();
    const covered = await readSnapshot(store, "lock", logic.foldVersion);
    expect(covered).toMatchObject({ manifest: { seq: 50 } });

    await history(log, "a", 1, 20);
    const second = projection(log, store);
    await second.start();
    expect(second.startedFromSeq).toBe(50);
    expect(second.get("a").generation).toBe(21);
    expect(second.get("b")).toEqual(first.get("b"));
    // Replies remembered before the snapshot survive it.
    expect(second.remembered("t.events.lock.b|acquire|r4")?.reply).toMatchObject({ lease: { owner: "o4", generation: 5 } });
    await second.stop();
  });

  /** A store holding the snapshot of 3 acquire/release pairs on "a", doctored by `doctor`. */
  async function doctoredStore(doctor: (store: MemoryProjectionSnapshotStore, manifest: SnapshotManifest) => void) {
    const log = new MemoryEventLog();
    await history(log, "a", 3);
    const store = new MemoryProjectionSnapshotStore();
    const first = projection(log, store);
    await first.start();
    await first.stop();
    const { manifest } = (await readSnapshot(store, "lock", logic.foldVersion)) as RestoredSnapshot;
    doctor(store, manifest);
    return { log, store };
  }
  const manifestOf = (store: MemoryProjectionSnapshotStore, m: SnapshotManifest) =>
    store.saved.set(manifestName("lock"), new TextEncoder().encode(JSON.stringify(m)));

  it.each<[string, (store: MemoryProjectionSnapshotStore, manifest: SnapshotManifest) => void]>([
    ["has a manifest that does not decode", (store) => store.saved.set(manifestName("lock"), new TextEncoder().encode("{no"))],
    ["was made by another fold version", (store, m) => manifestOf(store, { ...m, foldVersion: 1 })],
    ["lies beyond the stream", (store, m) => manifestOf(store, { ...m, seq: 999, parts: m.parts.map((p) => ({ ...p, seq: 999 })) })],
    ["lacks a part (a partial save)", (store, m) => store.saved.delete(partName("lock", m.parts[0]!.name))],
    [
      "has a doctored part",
      (store, m) => {
        const part = store.saved.get(partName("lock", m.parts[0]!.name))!;
        part[part.length - 3]! ^= 1;
      },
    ],
    [
      "has a cut part",
      (store, m) => store.saved.set(partName("lock", m.parts[0]!.name), store.saved.get(partName("lock", m.parts[0]!.name))!.slice(0, 40)),
    ],
  ])("ignores a snapshot that %s, with a warning, and folds the stream from the start", async (_why, doctor) => {
    const { log, store } = await doctoredStore(doctor);
    const warnings: string[] = [];
    const p = projection(log, store, warnings);
    await p.start();
    expect(p.startedFromSeq).toBe(0);
    expect(p.get("a").generation).toBe(3);
    expect(warnings.some((w) => w.includes("snapshot"))).toBe(true);
    await p.stop();
  });

  it("skips, while folding, the replies already past the horizon, all but those of the latest events", async () => {
    const log = new MemoryEventLog();
    await history(log, "a", 10);
    const at = (now: number) =>
      new KindProjection({
        log,
        filter: subjects.eventsOfKind("lock"),
        fold: logic,
        logger: pino({ level: "silent" }),
        replies: { horizonMs: 1000, keepLatest: 2 },
        now: () => now,
      });
    const late = at(T0 + 60_000);
    await late.start();
    // Acquire i is followed by 18 - 2i messages: only the last acquire is among the latest two.
    expect(late.replies.entries).toBe(1);
    expect(late.remembered("t.events.lock.a|acquire|r9")).toBeDefined();
    const soon = at(T0 + 500);
    await soon.start();
    expect(soon.replies.entries).toBe(10);
    await Promise.all([late.stop(), soon.stop()]);
  });

  it("logs how far a slow start's catch-up is, and stops logging once it has caught up", async () => {
    const log = new TricklingLog(10);
    await history(log, "a", 10);
    const lines: { msg: string; kind?: string; seq?: number; lastSeq?: number }[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
    const p = new KindProjection({
      log,
      filter: subjects.eventsOfKind("lock"),
      fold: logic,
      logger,
      opTimeoutMs: 200,
      progressEveryMs: 40,
    });
    await p.start();
    const progress = lines.filter((l) => l.msg === "projection catching up with the stream");
    // 20 events, one per 10 ms: about five reports, each short of the stream's last sequence.
    expect(progress.length).toBeGreaterThanOrEqual(2);
    for (const line of progress) expect(line).toMatchObject({ kind: "lock", lastSeq: 20, seq: expect.any(Number) as number });
    expect(progress.every((l) => l.seq! < 20)).toBe(true);
    const after = lines.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(lines.slice(after).filter((l) => l.msg === "projection catching up with the stream")).toEqual([]);
    await p.stop();
  });

  it("catches up through its follower, after a warning, when the catch-up read fails", async () => {
    const log = new (class extends MemoryEventLog {
      override scan(): Promise<void> {
        return Promise.reject(new Error("read refused (test)"));
      }
    })();
    await history(log, "a", 10);
    const lines: { msg: string; lastSeq?: number }[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
    const p = new KindProjection({ log, filter: subjects.eventsOfKind("lock"), fold: logic, logger, opTimeoutMs: 200 });
    await p.start();
    expect(p.get("a").generation).toBe(10);
    expect(p.seq).toBe(20);
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: "projection catch-up read failed; the follower reads the rest", lastSeq: 20 }),
    );
    await p.stop();
  });

  it("rejects a wait past its deadline with LogUnavailableError", async () => {
    const log = new MemoryEventLog();
    const p = projection(log);
    await p.start();
    await expect(p.reached(10, 20)).rejects.toBeInstanceOf(LogUnavailableError);
    await p.stop();
  });

  it("asks the leader once the follower's consumer has not answered for 500 ms, not after the whole operation timeout", async () => {
    // The consumer's answer was lost (as while NATS reconnects): it honours its deadline and never says yes.
    const log = new MemoryEventLog();
    const silent = withCaughtUp(
      log,
      (ms) => new Promise<boolean>((_, reject) => setTimeout(() => reject(new LogUnavailableError("no answer (test)", false)), ms)),
    );
    const leaderLooks: string[] = [];
    const spied = Object.assign(Object.create(silent) as MemoryEventLog, {
      lastSubjectSeq: (subject: string) => {
        leaderLooks.push(subject);
        return log.lastSubjectSeq(subject);
      },
    });
    await history(log, "a", 1);
    const p = new KindProjection({
      log: spied,
      filter: subjects.eventsOfKind("lock"),
      fold: logic,
      logger: capturingLogger([]),
      opTimeoutMs: 10_000,
    });
    await p.start();
    leaderLooks.length = 0;
    vi.useFakeTimers();
    try {
      let done = false;
      void p.freshSubject(subjects.event("lock", "a"), 10_000).then(() => (done = true));
      await vi.advanceTimersByTimeAsync(499);
      expect([done, leaderLooks]).toEqual([false, []]);
      await vi.advanceTimersByTimeAsync(1);
      expect([done, leaderLooks]).toEqual([true, [subjects.event("lock", "a")]]);
    } finally {
      vi.useRealTimers();
      await p.stop();
    }
  });

  it("keeps a busy lock's remembered replies within their bounds, so its snapshot stays small", async () => {
    const log = new MemoryEventLog();
    const store = new MemoryProjectionSnapshotStore();
    const p = new KindProjection({
      log,
      filter: subjects.eventsOfKind("lock"),
      fold: logic,
      logger: pino({ level: "silent" }),
      snapshots: store,
      replies: { maxEntries: 100 },
    });
    await p.start();
    await history(log, "hot", 500);
    expect(p.replies.entries).toBe(100);
    await p.stop();
    const { manifest } = (await readSnapshot(store, "lock", logic.foldVersion)) as RestoredSnapshot;
    expect(manifest.parts.reduce((n, part) => n + part.bytes, 0)).toBeLessThan(64 * 1024);
  });
});
