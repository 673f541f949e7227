/**
 * `npx leasehold` runs this project only in its clone (or a project that
 * installed it); anywhere else npx asks the npm registry for a package of
 * that name. So no Markdown file shows an `npx leasehold <command>` before
 * it has said where that runs: the README in its opening lines and its own
 * "Where `leasehold` runs" section, every other file with a link to it, and
 * "another terminal" always names the folder.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/cli-process.ts";

const COMMAND = /npx leasehold [a-z]/;
const POINTER = /README\.md#where-leasehold-runs|\(#where-leasehold-runs\)/;

function markdownFiles(): string[] {
  const out = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "*.md"], {
    cwd: ROOT,
    encoding: "utf8",
  });
  return out.split("\0").filter((f) => f !== "" && !f.includes("node_modules/"));
}

describe("where `npx leasehold` runs", () => {
  it("is said in every Markdown file before its first `npx leasehold <command>`", () => {
    const files = markdownFiles();
    expect(files).toContain("README.md");
    const unsaid: string[] = [];
    for (const file of files) {
      const text = readFileSync(join(ROOT, file), "utf8");
      const first = text.search(COMMAND);
      if (first === -1) continue;
      // The README's opening commands come first; the sentence right under them says where they run.
      const window = file === "README.md" ? text.slice(0, text.indexOf("\n## ")) : text.slice(0, first);
      if (!POINTER.test(window)) unsaid.push(file);
    }
    expect(unsaid).toEqual([]);
    expect(readFileSync(join(ROOT, "README.md"), "utf8")).toMatch(/^## Where `leasehold` runs$/m);
  });

  it("names the folder wherever it says another terminal", () => {
    for (const file of markdownFiles()) {
      for (const [line] of readFileSync(join(ROOT, file), "utf8").matchAll(/^.*another terminal.*$/gim))
        expect(line, file).toMatch(/same folder|in the clone/);
    }
  });
});
