import { describe, expect, it } from "vitest";
import { DEFAULT_HEAP_GROWTH_PERCENT, heapGrowthFlag } from "../../src/cli/heap-growth.ts";

describe("the heap growth serve sets", () => {
  it("leaves the heap to V8 unless told, and holds it to the percent given", () => {
    expect(DEFAULT_HEAP_GROWTH_PERCENT).toBe(0);
    expect(heapGrowthFlag(DEFAULT_HEAP_GROWTH_PERCENT, [])).toEqual({ applied: false, why: "V8's own policy" });
    expect(heapGrowthFlag(50, [])).toEqual({ applied: true, flag: "--heap-growing-percent=50" });
    expect(heapGrowthFlag(35, ["--enable-source-maps", "--heap-growing-percentage=5"])).toEqual({
      applied: true,
      flag: "--heap-growing-percent=35",
    });
  });

  it("leaves it to the operator who started node with the flag", () => {
    for (const own of ["--heap-growing-percent=50", "--heap_growing_percent=50", "--heap-growing-percent"])
      expect(heapGrowthFlag(20, ["--max-semi-space-size=8", own]), own).toEqual({ applied: false, why: "node's own flag" });
  });
});
