/**
 * Incremental projection snapshots on the in-memory log: whatever the
 * changes and wherever the saves and restarts fall, a projection restored
 * from its base and deltas (and the tail after them) equals a fold of the
 * whole stream; and a save writes only what changed since the one before.
 */
import fc from "fast-check";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { type SnapshotCompaction } from "../../src/projections/incremental-snapshots.ts";
import { ChangeTrackedMap } from "../../src/projections/fold-store.ts";
import { KindProjection } from "../../src/projections/kind-projection.ts";
import { MemoryProjectionSnapshotStore } from "../../src/projections/snapshot-stores.ts";
import { readSnapshot, type RestoredSnapshot } from "../../src/projections/projection-snapshots.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import type { LockState } from "../../src/lock/state.ts";
import { DEFAULT_SETTINGS } from "../support/lock-given.ts";
import { LockWriter as Writer } from "../support/lock-writer.ts";

const subjects = new Subjects("t");
const logic = lockLogic(DEFAULT_SETTINGS);
const NAMES = ["a", "b", "c", "d", "e", "f"];

function projection(
  log: MemoryEventLog,
  store?: MemoryProjectionSnapshotStore,
  compaction?: SnapshotCompaction,
): KindProjection<LockState> {
  return new KindProjection({
    log,
    filter: subjects.eventsOfKind("lock"),
    fold: logic,
    logger: pino({ level: "silent" }),
    snapshots: store,
    snapshotCompaction: compaction,
    snapshotEvery: 1_000_000,
    snapshotIntervalMs: 3_600_000,
  });
}

/** Every record of `p` with where it stands, sorted by id. */
const recordsOf = (p: KindProjection<LockState>) =>
  [...p.entries()].map(([id]) => [id, p.record(id)] as const).sort(([a], [b]) => a.localeCompare(b));

async function expectSameAsWholeFold(p: KindProjection<LockState>, writer: Writer<MemoryEventLog>): Promise<void> {
  const whole = projection(writer.log);
  await whole.start();
  expect(recordsOf(p)).toEqual(recordsOf(whole));
  for (const msgId of writer.requests) expect(p.remembered(msgId)).toEqual(whole.remembered(msgId));
  expect(p.seq).toBe(whole.seq);
  await whole.stop();
}

type Op = { event: string } | { save: true } | { restart: true };

describe("incremental projection snapshots", () => {
  it("restored after any changes, saves and restarts, equal a fold of the whole stream", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({ maxParts: fc.integer({ min: 1, max: 5 }), minBaseRecords: fc.nat(4) }),
        fc.array(
          fc.oneof<fc.Arbitrary<Op>[]>(
            fc.record({ event: fc.constantFrom(...NAMES) }),
            fc.constant({ save: true }),
            fc.constant({ restart: true }),
          ),
          { maxLength: 40 },
        ),
        async (compaction, ops) => {
          const log = new MemoryEventLog();
          const writer = new Writer(log);
          const store = new MemoryProjectionSnapshotStore();
          let p = projection(log, store, compaction);
          await p.start();
          for (const op of ops) {
            if ("event" in op) {
              await writer.next(op.event);
              await p.reached(await log.lastSeq());
            } else if ("save" in op) {
              await p.saveSnapshot();
            } else {
              await p.stop();
              p = projection(log, store, compaction);
              await p.start();
              await expectSameAsWholeFold(p, writer);
            }
          }
          await p.stop();
          const last = projection(log, store, compaction);
          await last.start();
          await expectSameAsWholeFold(last, writer);
          if (ops.some((op) => "event" in op)) expect(last.startedFromSeq).toBe(await log.lastSeq());
          await last.stop();
        },
      ),
      { numRuns: 60 },
    );
  });

  it("write only the records changed since the save before, until the deltas call for a new base", async () => {
    const log = new MemoryEventLog();
    const writer = new Writer(log);
    const store = new MemoryProjectionSnapshotStore();
    const p = projection(log, store, { minBaseRecords: 3, maxParts: 10 });
    for (const name of NAMES) await writer.next(name);
    await p.start();
    const parts = () =>
      readSnapshot(store, "lock", logic.foldVersion).then((s) => (s as RestoredSnapshot).manifest.parts.map((part) => part.records));
    await p.saveSnapshot();
    const seen = [await parts()];
    for (const changed of [["a"], ["b", "c"], ["a"], ["d"]]) {
      for (const name of changed) await writer.next(name);
      await p.reached(await log.lastSeq());
      await p.saveSnapshot();
      seen.push(await parts());
    }
    // A base of the six, deltas of one and two; a third delta would bring the deltas past three records: a new base.
    expect(seen).toEqual([[6], [6, 1], [6, 1, 2], [6], [6, 1]]);
    await p.stop();
    expect(store.saved.size).toBe(3); // the manifest, the base and its delta: the parts the base replaced are dropped
  });

  it("note the ids set since the last clear, unless the map is told not to (a store answered whole)", () => {
    const tracked = new ChangeTrackedMap<string, number>();
    const untracked = new ChangeTrackedMap<string, number>(false);
    for (const map of [tracked, untracked]) map.set("a", 1).set("b", 2).set("a", 3);
    expect([...tracked.changed].sort()).toEqual(["a", "b"]);
    expect(untracked.changed.size).toBe(0);
    expect([...untracked.entries()]).toEqual([...tracked.entries()]);
  });
});
