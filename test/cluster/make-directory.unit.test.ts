/**
 * makeDirectory: creates missing levels, and throws once where Node's
 * recursive mkdir would spin forever (a folder procfs refuses with ENOENT).
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeDirectory } from "../../src/cluster/make-directory.ts";

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("makeDirectory", () => {
  it("creates every missing level, and accepts a folder that exists", () => {
    const root = mkdtempSync(join(tmpdir(), "leasehold-mkdir-"));
    made.push(root);
    makeDirectory(join(root, "a/b/c"));
    expect(statSync(join(root, "a/b/c")).isDirectory()).toBe(true);
    makeDirectory(join(root, "a/b/c"));
    writeFileSync(join(root, "file"), "");
    expect(() => makeDirectory(join(root, "file"))).toThrow(/ENOTDIR/);
    expect(() => makeDirectory(join(root, "file/x"))).toThrow(/ENOTDIR/);
  });

  it("throws ENOENT under /proc (Linux), where a recursive mkdirSync never returns", () => {
    expect(() => makeDirectory("/proc/leasehold-no-such/x")).toThrow(/ENOENT/);
  });
});
