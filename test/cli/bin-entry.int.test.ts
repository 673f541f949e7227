/**
 * Which code `bin/leasehold.js` runs: the built dist/ when it is at least as
 * new as every file of src/ (production's code, and cheaper per request than
 * the sources through tsx), as the build's bundle of it when that was made
 * after dist/'s entry point (cheaper to load); the sources through tsx when
 * src/ changed since the build or there is no dist/. Checked on a copy of the
 * entry with stand-in entry points that say which one ran.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ROOT } from "./cli-process.ts";

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A package folder with the real bin entry, a src/ and (when asked) a dist/ entry, each printing its name. */
function packageWith(withDist: boolean): string {
  dir = mkdtempSync(join(tmpdir(), "leasehold-bin-"));
  cpSync(join(ROOT, "bin"), join(dir, "bin"), { recursive: true });
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ type: "module" }));
  mkdirSync(join(dir, "src/cli"), { recursive: true });
  writeFileSync(join(dir, "src/cli/main.ts"), 'const from: string = "source";\nconsole.log(from);\n');
  if (withDist) {
    mkdirSync(join(dir, "dist/cli"), { recursive: true });
    writeFileSync(join(dir, "dist/cli/main.js"), 'console.log("dist");\n');
  }
  return dir;
}

const ranFrom = (pkg: string) => execFileSync(process.execPath, [join(pkg, "bin/leasehold.js")], { encoding: "utf8" }).trim();
const setMtime = (file: string, secondsAgo: number) => {
  const t = new Date(Date.now() - secondsAgo * 1000);
  utimesSync(file, t, t);
};

describe("bin/leasehold.js", () => {
  it("runs the built dist/ when no file of src/ is newer than it", () => {
    const pkg = packageWith(true);
    setMtime(join(pkg, "src/cli/main.ts"), 60);
    expect(ranFrom(pkg)).toBe("dist");
  });

  it("runs the build's bundle of dist/ when it was made after dist/'s entry point, and dist/ as built when before", () => {
    const pkg = packageWith(true);
    setMtime(join(pkg, "src/cli/main.ts"), 60);
    writeFileSync(join(pkg, "dist/cli/main.bundle.js"), 'console.log("bundle");\n');
    expect(ranFrom(pkg)).toBe("bundle");
    // A dist/ built again (tsc alone) after the bundle: the bundle is stale.
    setMtime(join(pkg, "dist/cli/main.bundle.js"), 30);
    expect(ranFrom(pkg)).toBe("dist");
  });

  it("runs the sources through tsx when a file of src/ changed after the build", () => {
    const pkg = packageWith(true);
    setMtime(join(pkg, "dist/cli/main.js"), 60);
    expect(ranFrom(pkg)).toBe("source");
  });

  it("runs the sources through tsx when there is no dist/", () => {
    expect(ranFrom(packageWith(false))).toBe("source");
  });
});
