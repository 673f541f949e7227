/**
 * The package as a user gets it. `npm install <path of a clone>` into an
 * empty project (prepare builds the clone's dist/) and a short script that
 * takes and frees a lock with it. The published package: `npm pack`
 * (offline; prepare builds dist/), installed into an empty project with
 * `npm ci` from the npm cache, then `leasehold --help`, `leasehold serve`
 * and a client import run from it. Its data lands in the project's ./.leasehold, never inside
 * node_modules, so it survives the next `npm ci`.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { startTestService, uniquePrefix } from "../support/nats.ts";
import { cleanEnv, defer, freePort, run, waitForLog, ROOT, type Proc } from "./cli-process.ts";

const exec = promisify(execFile);

interface LockEntry {
  version?: string;
  dev?: boolean;
  devOptional?: boolean;
  [key: string]: unknown;
}

/**
 * A copy of the working tree's committed kinds of files, as a clone after
 * `npm ci` has them (its node_modules the repository's), without dist/.
 */
function cloneOf(dir: string): string {
  const src = join(dir, "clone");
  mkdirSync(src);
  for (const entry of [
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    "tsconfig.build.json",
    "nats.conf",
    "README.md",
    "LICENSE",
    "src",
    "bin",
    "scripts",
  ]) {
    cpSync(join(ROOT, entry), join(src, entry), { recursive: true });
  }
  symlinkSync(join(ROOT, "node_modules"), join(src, "node_modules"));
  return src;
}

/** Packs the clone into `dir` and returns the tarball; a dist/ its install's prepare built already is not built again. */
async function pack(src: string, dir: string): Promise<string> {
  if (!existsSync(join(src, "dist/index.js"))) await exec("npm", ["run", "prepare"], { cwd: src, env: cleanEnv() });
  const { stdout } = await exec("npm", ["pack", "--json", "--offline", "--ignore-scripts", "--pack-destination", dir], {
    cwd: src,
    env: cleanEnv(),
    maxBuffer: 16 << 20,
  });
  const [info] = JSON.parse(stdout.slice(stdout.indexOf("["))) as { filename: string; files: { path: string }[] }[];
  const files = info!.files.map((f) => f.path);
  // What the package's files name is in it: no source maps pointing at sources left out.
  expect(files.filter((f) => f.endsWith(".map"))).toEqual([]);
  expect(files).toEqual(
    expect.arrayContaining([
      "LICENSE",
      "README.md",
      "nats.conf",
      "bin/leasehold.js",
      "dist/cli/main.js",
      "dist/index.js",
      "dist/index.d.ts",
      "scripts/run-tied.sh",
      "scripts/nats-server.sh",
    ]),
  );
  expect(files.some((f) => f.startsWith("src/") || f.startsWith("test/"))).toBe(false);
  return join(dir, info!.filename);
}

/**
 * An empty project depending on the tarball, with a lockfile made from the
 * repository's (its production entries), so that `npm ci --offline` installs
 * it from the npm cache the repository's own `npm ci` filled.
 */
function appProject(dir: string, tarball: string): string {
  const app = join(dir, "packed-app");
  mkdirSync(app);
  const ours = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
    version: string;
    dependencies: Record<string, string>;
    bin: Record<string, string>;
    engines: Record<string, string>;
    license: string;
  };
  const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, LockEntry> };
  const spec = `file:${tarball}`;
  const packages: Record<string, LockEntry> = {
    "": { name: "app", version: "1.0.0", dependencies: { leasehold: spec } },
    "node_modules/leasehold": {
      version: ours.version,
      resolved: spec,
      integrity: `sha512-${createHash("sha512").update(readFileSync(tarball)).digest("base64")}`,
      license: ours.license,
      dependencies: ours.dependencies,
      bin: ours.bin,
      engines: ours.engines,
    },
  };
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (path === "" || !path.startsWith("node_modules/") || entry.dev === true || entry.devOptional === true) continue;
    // With its tarball's address, npm takes a package from the cache by its integrity alone, no registry lookup.
    const name = path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
    const file = `${name.slice(name.lastIndexOf("/") + 1)}-${entry.version}.tgz`;
    packages[path] = { resolved: `https://registry.npmjs.org/${name}/-/${file}`, ...entry };
  }
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ name: "app", version: "1.0.0", private: true, type: "module", dependencies: { leasehold: spec } }, null, 2),
  );
  writeFileSync(
    join(app, "package-lock.json"),
    JSON.stringify({ name: "app", version: "1.0.0", lockfileVersion: 3, requires: true, packages }, null, 2),
  );
  // A user's program: the typed client from the package, and the NATS client it installed.
  writeFileSync(
    join(app, "client.mjs"),
    [
      'import { connect } from "@nats-io/transport-node";',
      'import { LeaseholdClient } from "leasehold";',
      "const nc = await connect({ servers: process.argv[2] });",
      "const client = new LeaseholdClient(nc);",
      'const { lease } = await client.lock.acquire({ name: "tour", owner: "app" });',
      'await client.lock.release({ name: "tour", etag: lease.etag });',
      "console.log(JSON.stringify({ generation: lease.generation }));",
      "await nc.close();",
    ].join("\n"),
  );
  return app;
}

async function npmCi(app: string): Promise<void> {
  await exec("npm", ["ci", "--offline", "--no-audit", "--no-fund", "--loglevel", "error"], {
    cwd: app,
    env: cleanEnv(),
    maxBuffer: 16 << 20,
  });
}

/** The installed bin, run as `npx leasehold` would. */
function installed(app: string, args: string[], env: Record<string, string>): Proc {
  return run(process.execPath, [join(app, "node_modules/leasehold/bin/leasehold.js"), ...args], { cwd: app, env });
}

async function clientGeneration(app: string, port: number): Promise<number> {
  const { stdout } = await exec(process.execPath, ["client.mjs", `nats://127.0.0.1:${port}`], { cwd: app, env: cleanEnv() });
  return (JSON.parse(stdout) as { generation: number }).generation;
}

// One clone for both: its dist/ is built once, by the install's prepare, and then packed.
let dir: string;
let clone: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "leasehold-package-"));
  clone = cloneOf(dir);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("npm install <path of a clone>", () => {
  it("builds the clone's dist/ (prepare), so that a user's five-line script acquires and releases a lock", async () => {
    const app = join(dir, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true, type: "module" }));
    expect(existsSync(join(clone, "dist"))).toBe(false);
    await exec("npm", ["install", "--offline", "--no-audit", "--no-fund", "--loglevel", "error", clone], {
      cwd: app,
      env: cleanEnv(),
      maxBuffer: 16 << 20,
    });
    expect(existsSync(join(clone, "dist/index.js"))).toBe(true);
    // The NATS client the user installs alongside (docs/client.md), here the repository's.
    symlinkSync(join(ROOT, "node_modules/@nats-io"), join(app, "node_modules/@nats-io"));
    writeFileSync(
      join(app, "lock.mjs"),
      [
        'import { connect } from "@nats-io/transport-node";',
        'import { LeaseholdClient } from "leasehold";',
        "const nc = await connect({ servers: process.argv[2] });",
        'const lock = new LeaseholdClient(nc, { prefix: process.argv[3] }).lock, name = "installed";',
        'const { lease } = await lock.acquire({ name, owner: "app" });',
        "await lock.release({ name, etag: lease.etag }), console.log(lease.generation), await nc.close();",
      ].join("\n"),
    );
    const service = await startTestService(uniquePrefix());
    defer(() => service.stop());
    const { stdout } = await exec(process.execPath, ["lock.mjs", inject("natsUrl"), service.config.prefix], { cwd: app, env: cleanEnv() });
    expect(stdout.trim()).toBe("1");
  }, 120_000);
});

describe("the packed tarball", () => {
  it("installs with npm ci, runs --help, serve and a client import, and keeps its data across npm ci", async () => {
    const tarball = await pack(clone, dir);
    const app = appProject(dir, tarball);
    await npmCi(app);
    // Never a checkout's sources: the package runs its built dist/.
    expect(existsSync(join(app, "node_modules/leasehold/src"))).toBe(false);
    // nats-server comes from NATS_SERVER_BIN here; otherwise it is fetched to XDG_CACHE_HOME, never node_modules.
    const env = { NATS_SERVER_BIN: inject("natsServerBinary"), XDG_CACHE_HOME: join(dir, "cache") };

    const help = installed(app, ["--help"], env);
    expect((await help.exited).code).toBe(0);
    expect(help.stdout()).toMatch(/serve/);

    const port = await freePort();
    const first = installed(app, ["serve", "--nats-port", String(port), "--http", "off"], env);
    await waitForLog(first, "leasehold serving");
    expect(await clientGeneration(app, port)).toBe(1);
    first.child.kill("SIGTERM");
    expect((await first.exited).code).toBe(0);

    expect(readdirSync(join(app, ".leasehold"))).toEqual(expect.arrayContaining(["jetstream", "service-password"]));
    const leftInPackage = readdirSync(join(app, "node_modules/leasehold"));
    expect(leftInPackage.filter((f) => f.startsWith(".") || f === "jetstream")).toEqual([]);

    // npm ci removes node_modules and installs again: the lock's history is still there.
    await npmCi(app);
    const second = installed(app, ["serve", "--nats-port", String(port), "--http", "off"], env);
    await waitForLog(second, "leasehold serving");
    expect(await clientGeneration(app, port)).toBe(2);
    second.child.kill("SIGTERM");
    expect((await second.exited).code).toBe(0);
  }, 120_000);
});
