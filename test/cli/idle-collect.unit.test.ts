import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { getHeapStatistics } from "node:v8";
import {
  CommandCount,
  IDLE_COLLECT_MIN_GROWTH_BYTES,
  IDLE_COLLECT_PAUSE_SHARE,
  IDLE_UTILISATION,
  IdleCollectPolicy,
  inspectorCollect,
} from "../../src/cli/idle-collect.ts";

const MB = 1024 * 1024;
const idle = (heapMb: number, commands = 0) => ({ utilisation: 0.01, commands, heapBytes: heapMb * MB });
const busy = (heapMb: number, commands = 0) => ({ utilisation: 0.6, commands, heapBytes: heapMb * MB });

describe("when the idle collection runs", () => {
  it("after the idle period, once the heap has grown by the threshold, and a hundred pauses after the last", () => {
    const policy = new IdleCollectPolicy(2000, 1000, 32 * MB, 0.01);
    expect(policy.observe(idle(50))).toBe(false);
    expect(policy.observe(busy(200))).toBe(false);
    expect(policy.observe(idle(200))).toBe(false); // idle 1 s of 2
    expect(policy.observe(idle(200))).toBe(true);
    policy.collected(60 * MB, 100);
    // What the collection left is the new baseline; the idle period starts again, and 100 ms of pause buys 10 s of wait.
    expect(policy.observe(idle(70))).toBe(false);
    expect(policy.observe(idle(91))).toBe(false); // grown 31 MiB
    for (let s = 3; s < 10; s++) expect(policy.observe(idle(92)), `${s} s after`).toBe(false); // grown enough, within the interval
    expect(policy.observe(idle(92))).toBe(true); // 10 s after
  });

  it("never while commands come, however little CPU they take, nor under load", () => {
    const policy = new IdleCollectPolicy(2000, 1000);
    policy.observe(idle(10));
    for (let i = 1; i <= 20; i++) expect(policy.observe(idle(100 + i, i))).toBe(false);
    for (let i = 0; i < 20; i++) expect(policy.observe({ utilisation: IDLE_UTILISATION, commands: 20, heapBytes: 200 * MB })).toBe(false);
    // Quiet again: two idle samples later it collects.
    expect(policy.observe(idle(200, 20))).toBe(false);
    expect(policy.observe(idle(200, 20))).toBe(true);
  });

  it("collects exactly when a reference model of the rule says so (property)", () => {
    const sample = fc.record({
      utilisation: fc.double({ min: 0, max: 1, noNaN: true }),
      newCommands: fc.constantFrom(0, 0, 0, 1, 5),
      heapMb: fc.integer({ min: 1, max: 400 }),
    });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.array(sample, { maxLength: 80 }),
        // The pauses the collections take, in turn (ms): each buys a hundred times its length of wait.
        fc.array(fc.integer({ min: 0, max: 80 }), { minLength: 1 }),
        (idleTicks, samples, pausesMs) => {
          const policy = new IdleCollectPolicy(idleTicks * 1000, 1000, IDLE_COLLECT_MIN_GROWTH_BYTES, IDLE_COLLECT_PAUSE_SHARE);
          let waitTicks = 0;
          let collections = 0;
          let lowest = Infinity;
          let idleRun = 0;
          let sinceCollected = Infinity;
          let commands = 0;
          for (const s of samples) {
            const bytes = s.heapMb * MB;
            commands += s.newCommands;
            lowest = Math.min(lowest, bytes);
            idleRun = s.utilisation < IDLE_UTILISATION && s.newCommands === 0 ? idleRun + 1 : 0;
            sinceCollected++;
            const expected = idleRun >= idleTicks && sinceCollected >= waitTicks && bytes - lowest >= IDLE_COLLECT_MIN_GROWTH_BYTES;
            expect(policy.observe({ utilisation: s.utilisation, commands, heapBytes: bytes })).toBe(expected);
            if (expected) {
              const pauseMs = pausesMs[collections++ % pausesMs.length]!;
              policy.collected(bytes / 2, pauseMs);
              waitTicks = pauseMs / IDLE_COLLECT_PAUSE_SHARE / 1000;
              lowest = bytes / 2;
              idleRun = 0;
              sinceCollected = 0;
            }
          }
        },
      ),
    );
  });
});

describe("the command count", () => {
  it("counts finished commands and passes every report on", () => {
    const seen: string[] = [];
    const count = new CommandCount({
      commandFinished: (kind, op, outcome) => seen.push(`${kind}.${op} ${outcome}`),
      appendFinished: () => seen.push("append"),
      appendConflict: () => seen.push("conflict"),
    });
    count.commandFinished("lock", "acquire", "ok", 0.001);
    count.appendFinished(0.002);
    count.appendConflict();
    count.commandFinished("lock", "release", "ok", 0.001);
    expect(count.count).toBe(2);
    expect(seen).toEqual(["lock.acquire ok", "append", "conflict", "lock.release ok"]);
  });
});

describe("the inspector's collection", () => {
  it("returns the spare heap a burst left (a real collection in this process)", async () => {
    const inspector = await inspectorCollect();
    expect(inspector).toBeDefined();
    let burst: object[] | undefined = [];
    for (let i = 0; i < 1_000_000; i++) burst.push({ i, s: `v${i}` });
    const grown = getHeapStatistics().total_heap_size;
    burst = undefined;
    await inspector!.collect();
    inspector!.close();
    expect(burst).toBeUndefined();
    // The million objects (over 50 MB) are gone, and the pages that held them with them.
    expect(grown - getHeapStatistics().total_heap_size).toBeGreaterThan(32 * MB);
  });
});
