/**
 * A fresh clone of the repository for tests that follow the docs as a new
 * user would: the files git tracks or would track, copied from the working tree (so a test
 * sees uncommitted edits too), without dist/ or .leasehold/, with the
 * checkout's node_modules linked in (what `npm ci` would install).
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, symlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { ROOT, tempDir } from "../cli/cli-process.ts";

/** Copies the tracked files of the checkout into a temporary folder (removed after the test) and returns it. */
export function freshClone(): string {
  const clone = tempDir("clone");
  const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter(Boolean);
  for (const file of files) {
    const from = join(ROOT, file);
    const to = join(clone, file);
    mkdirSync(dirname(to), { recursive: true });
    // A tracked file deleted in the working tree is not in the clone either.
    try {
      cpSync(from, to);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
  }
  symlinkSync(join(ROOT, "node_modules"), join(clone, "node_modules"), "dir");
  return clone;
}

/** A documented command line as bash runs it in `clone`: `npx leasehold` is the clone's own bin entry. */
export function inClone(clone: string, line: string): string {
  return line.replace(/\bnpx leasehold\b/g, `${JSON.stringify(process.execPath)} ${JSON.stringify(join(clone, "bin/leasehold.js"))}`);
}
