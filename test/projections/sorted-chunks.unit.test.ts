/**
 * The ordered set of chunks against a sorted array: after any additions and
 * removals it iterates in order, and a visit that stops early sees exactly
 * the first elements iteration gives.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SortedChunks } from "../../src/projections/sorted-chunks.ts";

type Op = { readonly add: number } | { readonly remove: number };

// Enough distinct values to split chunks (128 elements each), few enough that removals hit.
const value = fc.integer({ min: 0, max: 600 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: value.map((add) => ({ add })), weight: 3 },
  { arbitrary: value.map((remove) => ({ remove })), weight: 1 },
);

describe("SortedChunks", () => {
  it("iterates as a sorted set would, and visitUntil stops at the first `limit` elements in that order", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 800 }), fc.nat({ max: 700 }), (ops, limit) => {
        const set = new SortedChunks<number>((a, b) => a - b);
        const model = new Set<number>();
        for (const o of ops) {
          if ("add" in o) {
            set.add(o.add);
            model.add(o.add);
          } else expect(set.delete(o.remove)).toBe(model.delete(o.remove));
        }
        const sorted = [...model].sort((a, b) => a - b);
        expect([...set]).toEqual(sorted);
        expect(set.size).toBe(sorted.length);
        const seen: number[] = [];
        set.visitUntil((item) => {
          seen.push(item);
          return seen.length >= limit;
        });
        expect(seen).toEqual(sorted.slice(0, Math.max(1, limit)));
      }),
      { numRuns: 150 },
    );
  });
});
