/** The docs show the machines the runtime runs: the generated sections are what the machines generate now. */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { lockDocAsGenerated } from "../support/machine-docs.ts";

describe("docs generated from the machines", () => {
  it("docs/locks.md shows the lock statechart as it is (run npm run diagrams after changing it)", async () => {
    const path = fileURLToPath(new URL("../../docs/locks.md", import.meta.url));
    const doc = readFileSync(path, "utf8");
    expect(await lockDocAsGenerated(doc, path)).toBe(doc);
    expect(doc).toContain("held --> free: LockReleased / applyReleased");
  });
});
