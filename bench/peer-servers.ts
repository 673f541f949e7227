/**
 * etcd and Redis for the peers bench: found on PATH or installed from
 * Debian's packages, started on free loopback ports with a temporary data
 * directory, probed until they answer, and stopped (then their directory
 * removed) within a bounded time.
 */
import { execFile, spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { basename, delimiter, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { processCpuSeconds } from "./support.ts";

/** A server process owned by the peers bench. */
export interface PeerServer {
  /** `host:port` (Redis) or `http://host:port` (etcd). */
  readonly url: string;
  readonly pid: number;
  readonly version: string;
  /** The command line it was started with, for the record. */
  readonly command: readonly string[];
  /** CPU seconds (user + system) it has used so far; undefined off Linux. */
  cpuSeconds(): number | undefined;
  /** Stops it (SIGTERM, SIGKILL after 10 s) and removes its data directory. */
  stop(): Promise<void>;
}

/** How long a server gets to answer its first probe. */
const START_TIMEOUT_MS = 20_000;
/** How long a server gets to exit after SIGTERM before SIGKILL. */
const STOP_TIMEOUT_MS = 10_000;
/** apt-get update + install of both packages: minutes on a slow mirror, never unbounded. */
const INSTALL_TIMEOUT_MS = 10 * 60_000;

/** The Debian package of each binary the bench needs. */
export const DEBIAN_PACKAGES = { etcd: "etcd-server", "redis-server": "redis-server" } as const;

/** The full path of `name` on `path` (a PATH value), or undefined. */
export function findOnPath(name: string, path: string | undefined = process.env.PATH): string | undefined {
  for (const dir of (path ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here; try the next directory
    }
  }
  return undefined;
}

/**
 * Makes sure each binary in `binaries` is on PATH, installing the missing
 * ones' Debian packages with `apt-get update && apt-get install -y` (one
 * progress line; bounded by {@link INSTALL_TIMEOUT_MS}).
 */
export async function ensureBinaries(binaries: readonly (keyof typeof DEBIAN_PACKAGES)[], progress: (line: string) => void): Promise<void> {
  const missing = binaries.filter((b) => findOnPath(b) === undefined);
  if (missing.length === 0) return;
  const packages = missing.map((b) => DEBIAN_PACKAGES[b]);
  if (findOnPath("apt-get") === undefined) {
    throw new Error(`${missing.join(" and ")} not found and no apt-get to install ${packages.join(" ")}; install them and retry`);
  }
  progress(`installing ${packages.join(" ")} from Debian's packages (apt-get; about a minute)...`);
  const run = promisify(execFile);
  // No service manager runs here, so the packages' own services are not started; only the binaries are used.
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  try {
    await run("apt-get", ["update"], { env, timeout: INSTALL_TIMEOUT_MS, maxBuffer: 64 << 20 });
    await run("apt-get", ["install", "-y", ...packages], { env, timeout: INSTALL_TIMEOUT_MS, maxBuffer: 64 << 20 });
  } catch (e) {
    const err = e as Error & { stderr?: string };
    const last = (err.stderr ?? err.message).trim().split("\n").pop();
    throw new Error(`apt-get install ${packages.join(" ")} failed: ${last}`);
  }
  const still = missing.filter((b) => findOnPath(b) === undefined);
  if (still.length > 0) throw new Error(`${still.join(" and ")} still not on PATH after installing ${packages.join(" ")}`);
}

/** A free TCP port on 127.0.0.1 (the OS picks it; released just before the server binds it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("could not find a free loopback port");
  return address.port;
}

/** etcd's command line: one member on loopback, data in `dataDir`, warnings only; `noFsync` adds `--unsafe-no-fsync`. */
export function etcdArgs(options: { dataDir: string; clientPort: number; peerPort: number; noFsync: boolean }): string[] {
  const client = `http://127.0.0.1:${options.clientPort}`;
  const peer = `http://127.0.0.1:${options.peerPort}`;
  return [
    "--name",
    "bench",
    "--data-dir",
    options.dataDir,
    "--listen-client-urls",
    client,
    "--advertise-client-urls",
    client,
    "--listen-peer-urls",
    peer,
    "--initial-advertise-peer-urls",
    peer,
    "--initial-cluster",
    `bench=${peer}`,
    "--logger",
    "zap",
    "--log-outputs",
    "stderr",
    "--log-level",
    "warn",
    ...(options.noFsync ? ["--unsafe-no-fsync"] : []),
  ];
}

/**
 * redis-server's command line: loopback only, data in `dir`. `default`
 * leaves persistence at the compiled-in defaults (RDB save points, no AOF);
 * `aof-always` turns on the append-only file with an fsync per write.
 */
export function redisArgs(options: { dir: string; port: number; persistence: "default" | "aof-always" }): string[] {
  return [
    "--port",
    String(options.port),
    "--bind",
    "127.0.0.1",
    "--dir",
    options.dir,
    "--daemonize",
    "no",
    ...(options.persistence === "aof-always" ? ["--appendonly", "yes", "--appendfsync", "always"] : []),
  ];
}

/** Starts `binary` with `args` (built for a fresh data directory), waits until `ready` resolves true. */
async function startServer(options: {
  binary: string;
  args: (dir: string) => string[];
  url: string;
  version: string;
  ready: () => Promise<boolean>;
}): Promise<PeerServer> {
  const dir = mkdtempSync(join(tmpdir(), `leasehold-peer-${basename(options.binary)}-`));
  const args = options.args(dir);
  const child = spawn(options.binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (c: Buffer) => (output = (output + c.toString()).slice(-4000));
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const spawnError = new Promise<Error>((resolve) => child.once("error", resolve));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const failed = await Promise.race([spawnError, sleep(0).then(() => undefined)]);
    if (failed !== undefined) {
      await stop();
      throw new Error(`${options.binary} did not start: ${failed.message}`);
    }
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`${options.binary} exited (code ${child.exitCode}) before answering:\n${output}`);
    }
    if (await options.ready().catch(() => false)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${options.binary} did not answer within ${START_TIMEOUT_MS / 1000} s:\n${output}`);
    }
    await sleep(100);
  }
  const pid = child.pid!;
  return {
    url: options.url,
    pid,
    version: options.version,
    command: [options.binary, ...args],
    cpuSeconds: () => processCpuSeconds(pid),
    stop,
  };
}

/** `<name> <version>` from `binary --version` (etcd: `etcd Version: 3.4.23`, Redis: `Redis server v=7.0.15 ...`), bounded. */
async function versionOf(binary: string, name: string): Promise<string> {
  const { stdout } = await promisify(execFile)(binary, ["--version"], { timeout: 10_000 });
  const version = /(?:Version: |v=)(\S+)/.exec(stdout)?.[1];
  return version === undefined ? (stdout.trim().split("\n")[0] ?? "unknown") : `${name} ${version}`;
}

/** Starts one etcd member on loopback; `noFsync` runs it with `--unsafe-no-fsync`. */
export async function startEtcd(noFsync: boolean): Promise<PeerServer> {
  const binary = findOnPath("etcd") ?? "etcd";
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${clientPort}`;
  return startServer({
    binary,
    args: (dir) => etcdArgs({ dataDir: join(dir, "data"), clientPort, peerPort, noFsync }),
    url,
    version: await versionOf(binary, "etcd"),
    // etcd's /health answers {"health":"true"} once the member has a leader and serves requests.
    ready: async () => {
      const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1000) });
      return res.ok && ((await res.json()) as { health?: string }).health === "true";
    },
  });
}

/** Starts redis-server on loopback at the given persistence. */
export async function startRedis(persistence: "default" | "aof-always"): Promise<PeerServer> {
  const binary = findOnPath("redis-server") ?? "redis-server";
  const port = await freePort();
  return startServer({
    binary,
    args: (dir) => redisArgs({ dir, port, persistence }),
    url: `127.0.0.1:${port}`,
    version: await versionOf(binary, "redis-server"),
    ready: async () => {
      const probe = new Redis({
        host: "127.0.0.1",
        port,
        lazyConnect: true,
        connectTimeout: 1000,
        commandTimeout: 1000,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
      });
      // A refused connection is the answer "not yet"; without a listener ioredis would print it.
      probe.on("error", () => undefined);
      try {
        await probe.connect();
        return (await probe.ping()) === "PONG";
      } finally {
        probe.disconnect();
      }
    },
  });
}
