import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { getHeapStatistics } from "node:v8";
import { IDLE_COLLECT_MIN_GROWTH_BYTES, IDLE_UTILISATION, IdleCollectPolicy, inspectorCollect } from "../../src/cli/idle-collect.ts";

const MB = 1024 * 1024;
const idle = (heapMb: number) => ({ utilisation: 0.01, heapBytes: heapMb * MB });
const busy = (heapMb: number) => ({ utilisation: 0.6, heapBytes: heapMb * MB });

describe("when the idle collection runs", () => {
  it("after the idle period, once the heap has grown by the threshold", () => {
    const policy = new IdleCollectPolicy(2000, 1000);
    expect(policy.observe(idle(50))).toBe(false);
    expect(policy.observe(busy(200))).toBe(false);
    expect(policy.observe(idle(200))).toBe(false); // idle 1 s of 2
    expect(policy.observe(idle(200))).toBe(true);
    policy.collected(60 * MB);
    // What the collection left is the new baseline, and the idle period starts again.
    expect(policy.observe(idle(70))).toBe(false);
    expect(policy.observe(idle(70))).toBe(false);
    expect(policy.observe(idle(91))).toBe(false);
    expect(policy.observe(idle(92))).toBe(true);
  });

  it("never under load, however large the heap", () => {
    const policy = new IdleCollectPolicy(2000, 1000);
    policy.observe(idle(10));
    for (let i = 0; i < 20; i++) expect(policy.observe({ utilisation: IDLE_UTILISATION, heapBytes: (100 + i) * MB })).toBe(false);
  });

  it("collects only when the growth since the lowest heap seen reaches the threshold after a full idle period (property)", () => {
    const sample = fc.record({ utilisation: fc.double({ min: 0, max: 1, noNaN: true }), heapMb: fc.integer({ min: 1, max: 400 }) });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.array(sample, { maxLength: 60 }), (idleTicks, samples) => {
        const policy = new IdleCollectPolicy(idleTicks * 1000, 1000);
        let lowest = Infinity;
        let idleRun = 0;
        for (const s of samples) {
          const bytes = s.heapMb * MB;
          lowest = Math.min(lowest, bytes);
          idleRun = s.utilisation < IDLE_UTILISATION ? idleRun + 1 : 0;
          const expected = idleRun >= idleTicks && bytes - lowest >= IDLE_COLLECT_MIN_GROWTH_BYTES;
          expect(policy.observe({ utilisation: s.utilisation, heapBytes: bytes })).toBe(expected);
          if (expected) {
            policy.collected(bytes / 2);
            lowest = bytes / 2;
            idleRun = 0;
          }
        }
      }),
    );
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
