/**
 * When a projection saves its snapshots: after `every` events but never
 * sooner than the gap after the last save (under load a save costs about
 * the same whatever it covers), after the interval when anything changed,
 * never before the start caught up, and one at a time. On an injected clock.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { SnapshotSchedule } from "../../src/projections/kind-projection.ts";

/** A schedule on a clock the test moves, counting its saves (each resolves at once). */
function schedule(settings: { every?: number; intervalMs?: number; minGapMs?: number }) {
  let nowMs = 1_000_000;
  const saves: number[] = [];
  let seq = 0;
  const s = new SnapshotSchedule({
    kind: "lock",
    logger: pino({ level: "silent" }),
    save: (at) => {
      saves.push(at);
      return Promise.resolve(1);
    },
    seq: () => seq,
    now: () => nowMs,
    ...settings,
  });
  const fold = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      seq++;
      s.folded();
      await Promise.resolve(); // a save in flight ends before the next event, as between two deliveries
    }
  };
  return { s, saves, fold, advance: (ms: number) => void (nowMs += ms) };
}

describe("the snapshot schedule", () => {
  it("saves after `every` events once the gap since the last save has passed", async () => {
    const { s, saves, fold, advance } = schedule({ every: 100, minGapMs: 5_000, intervalMs: 60_000 });
    s.caughtUpWithStream();
    advance(5_000);
    await fold(99);
    expect(saves).toEqual([]);
    await fold(1);
    expect(saves).toEqual([100]);
  });

  it("holds a save due by count until the gap has passed, then takes it on the next event or tick", async () => {
    const { s, saves, fold, advance } = schedule({ every: 100, minGapMs: 5_000, intervalMs: 60_000 });
    s.caughtUpWithStream();
    advance(5_000);
    await fold(100);
    expect(saves).toEqual([100]);
    await fold(1_000); // ten counts' worth within the gap: no save
    expect(saves).toEqual([100]);
    advance(4_999);
    await fold(1);
    expect(saves).toEqual([100]);
    advance(1);
    s.tick();
    await Promise.resolve();
    expect(saves).toEqual([100, 1_101]);
  });

  it("saves fewer than `every` events once the interval has passed, and nothing when nothing changed", async () => {
    const { s, saves, fold, advance } = schedule({ every: 100, minGapMs: 5_000, intervalMs: 60_000 });
    s.caughtUpWithStream();
    advance(60_000);
    s.tick();
    expect(saves).toEqual([]);
    await fold(3);
    expect(saves).toEqual([1]); // the interval had passed at the first event
    advance(59_999);
    await fold(2);
    s.tick();
    expect(saves).toEqual([1]);
    advance(1);
    s.tick();
    await Promise.resolve();
    expect(saves).toEqual([1, 5]);
  });

  it("takes nothing before the start caught up, then one save at once for a long backlog", async () => {
    const { s, saves, fold } = schedule({ every: 100, minGapMs: 5_000 });
    await fold(250);
    expect(saves).toEqual([]);
    s.caughtUpWithStream();
    await Promise.resolve();
    expect(saves).toEqual([250]);
  });

  it("keeps the gap 5 s by default, and never longer than the interval", async () => {
    const byDefault = schedule({ every: 10 });
    byDefault.s.caughtUpWithStream();
    await byDefault.fold(10);
    byDefault.advance(4_999);
    await byDefault.fold(1);
    expect(byDefault.saves).toEqual([]);
    byDefault.advance(1);
    await byDefault.fold(1);
    expect(byDefault.saves).toEqual([12]);

    const shortInterval = schedule({ every: 10, intervalMs: 1_000 });
    shortInterval.s.caughtUpWithStream();
    shortInterval.advance(1_000);
    await shortInterval.fold(10);
    expect(shortInterval.saves).toEqual([1]); // the interval, with the first event
  });
});
