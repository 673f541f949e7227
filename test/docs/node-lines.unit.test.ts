/**
 * The Node lines are stated once in `engines`, and that is what CI runs and
 * what a user reads where they install: .ci/run runs the machine's Node (the
 * lowest line) and then `NODE_LTS`; the README and client.md name both lines
 * with the lowest line's minimum.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/cli-process.ts";

const read = (file: string) => readFileSync(join(ROOT, file), "utf8");

describe("the supported Node lines", () => {
  it("are engines' lines, the ones .ci/run runs, and the ones the README and client.md state", () => {
    const engines = (JSON.parse(read("package.json")) as { engines: { node: string } }).engines.node;
    const ranges = engines.split("||").map((r) => /^\s*\^(\d+)\.(\d+)\.0\s*$/.exec(r));
    expect(
      ranges.every((r) => r !== null),
      engines,
    ).toBe(true);
    const [lowest, newest] = ranges.map((r) => ({ major: Number(r![1]), minor: Number(r![2]) }));
    expect(ranges).toHaveLength(2);
    const ci = read(".ci/run");
    expect(ci).toMatch(new RegExp(`^NODE_LTS=${newest!.major}$`, "m"));
    expect(ci).toMatch(new RegExp(`machine's Node \\(the ${lowest!.major} line\\)`));
    const minimum = `${lowest!.major}.${lowest!.minor}`;
    expect(read("README.md")).toMatch(new RegExp(`Node ${lowest!.major} \\(${minimum} or later\\) or ${newest!.major}`));
    expect(read("docs/client.md")).toMatch(
      new RegExp(`Node \\*\\*${lowest!.major}\\*\\* \\(${minimum} or later\\) and \\*\\*${newest!.major}\\*\\*`),
    );
  });
});
