/**
 * How many threads `replay` and `audit` fold on: LEASEHOLD_TOOLS_THREADS
 * decides when set (and anything but 1 or 2 is a usage error); unset, two
 * threads only on a multi-core machine for a read of 100,000 messages or more.
 */
import { describe, expect, it } from "vitest";
import { TWO_THREADS_FROM_MESSAGES, toolsOnTwoThreads, toolThreadsSetting } from "../../src/cli/tool-threads.ts";
import { ToolUsageError } from "../../src/tools/errors.ts";

describe("tool threads", () => {
  it("reads LEASEHOLD_TOOLS_THREADS", () => {
    expect(toolThreadsSetting({})).toBe("auto");
    expect(toolThreadsSetting({ LEASEHOLD_TOOLS_THREADS: "" })).toBe("auto");
    expect(toolThreadsSetting({ LEASEHOLD_TOOLS_THREADS: "1" })).toBe(1);
    expect(toolThreadsSetting({ LEASEHOLD_TOOLS_THREADS: "2" })).toBe(2);
    for (const bad of ["0", "3", "two", " 2"]) expect(() => toolThreadsSetting({ LEASEHOLD_TOOLS_THREADS: bad })).toThrow(ToolUsageError);
  });

  it("unset, folds on two threads only with two cores or more and a long read", () => {
    expect(TWO_THREADS_FROM_MESSAGES).toBe(100_000);
    expect(toolsOnTwoThreads("auto", TWO_THREADS_FROM_MESSAGES, 2)).toBe(true);
    expect(toolsOnTwoThreads("auto", TWO_THREADS_FROM_MESSAGES - 1, 2)).toBe(false);
    expect(toolsOnTwoThreads("auto", 1_000_000, 1)).toBe(false);
  });

  it("set, does as told whatever the read and the cores", () => {
    expect(toolsOnTwoThreads(1, 1_000_000, 8)).toBe(false);
    expect(toolsOnTwoThreads(2, 10, 1)).toBe(true);
  });
});
