/**
 * The nats-server `leasehold serve` starts when no NATS URL is given: the
 * package's `nats.conf` with its port and store moved to the data folder,
 * run through `scripts/run-tied.sh` so that it stops when `serve` does, in
 * whatever way `serve` ends (SIGKILL included).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect as netConnect } from "node:net";
import { join, resolve } from "node:path";
import type { Logger } from "pino";
import { CliError, EXIT, UsageError } from "./cli-errors.ts";
import { leaseholdByPath } from "./config-output.ts";
import { makeDirectory } from "../cluster/make-directory.ts";
import { natsServerBinary, PROJECT_ROOT } from "../cluster/nats-server-binary.ts";
import { appendUserOf, serviceUserOf } from "../security/nats-permissions.ts";

/** The user the shipped nats.conf lets answer requests (and publish only to the clients' inboxes). */
export const SERVICE_USER = serviceUserOf("leasehold");

/** The user the shipped nats.conf gives the right to write the event stream. */
export const APPEND_USER = appendUserOf("leasehold");

/** File in the data folder holding the service user's password (owner-only), for a second instance to join. */
export const PASSWORD_FILE = "service-password";

/** File in the data folder holding the appending user's password (owner-only). */
export const APPEND_PASSWORD_FILE = "append-password";

/** A running local nats-server and the credentials of the two service users its configuration defines. */
export interface LocalNats {
  readonly url: string;
  readonly user: string;
  readonly password: string;
  /** The user that appends, and its password. */
  readonly appendUser: string;
  readonly appendPassword: string;
  /** The nats-server's own pid. */
  readonly pid: number;
  /** Resolves with the exit code of nats-server (through its wrapper) once it has ended, stopped or not. */
  readonly exited: Promise<number | null>;
  /** Stops nats-server; resolves once it is gone (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<void>;
}

/** Where and how to run it. */
export interface LocalNatsOptions {
  readonly dataDir: string;
  readonly port: number;
  readonly host?: string;
  readonly logger: Logger;
  /** Told what is happening when it takes a while (fetching nats-server). */
  readonly note?: (message: string) => void;
  /** Called with the wrapper process as soon as it exists, so that a stop during start-up can end it. */
  readonly onSpawn?: (stop: (graceMs?: number) => Promise<void>) => void;
}

/** The port is taken: never attach silently to whatever listens there. */
export class PortInUseError extends UsageError {
  constructor(host: string, port: number, ownDataDir?: string) {
    const howToJoin =
      ownDataDir === undefined
        ? `or use that server with --nats nats://${host}:${port}`
        : `or join the leasehold nats-server of ${ownDataDir} as a second instance with ${joinCommand(ownDataDir, `nats://${host}:${port}`)}`;
    super(
      `port ${port} on ${host} is already in use (another nats-server, or a leasehold serve already running): pick a free one with --nats-port <port>, ${howToJoin}`,
    );
  }
}

/**
 * The command that runs a second instance on the nats-server a `serve`
 * started with its data in `dataDir`, listening on `url`: `npx leasehold` when
 * this one was started so (in the clone, where npx finds it), else by path
 * (`leasehold` alone is on no PATH in a clone).
 */
function joinCommand(dataDir: string, url: string): string {
  return (
    `LEASEHOLD_USER=${SERVICE_USER} LEASEHOLD_PASSWORD="$(cat ${join(dataDir, PASSWORD_FILE)})" ` +
    `LEASEHOLD_APPEND_USER=${APPEND_USER} LEASEHOLD_APPEND_PASSWORD="$(cat ${join(dataDir, APPEND_PASSWORD_FILE)})" ` +
    `${process.env.npm_command === "exec" ? "npx leasehold" : leaseholdByPath()} serve --nats ${url}`
  );
}

/** A PortInUseError that says how to join when the server on the port is the one this data folder's serve started. */
function portInUse(host: string, port: number, dataDir: string): PortInUseError {
  const ours =
    existsSync(dataDir) &&
    readdirSync(dataDir).some((name) => /^nats-server_(\d+)\.ports$/.test(name) && alive(Number(name.split(/[_.]/)[1])));
  const joinable = ours && existsSync(join(dataDir, PASSWORD_FILE)) && existsSync(join(dataDir, APPEND_PASSWORD_FILE));
  return new PortInUseError(host, port, joinable ? dataDir : undefined);
}

/**
 * Two nats-servers on one JetStream store corrupt it: a data folder whose
 * nats-server (named by a ports file of a live pid) still runs, on another
 * port, is refused before its configuration is rewritten.
 */
function refuseSharedStore(dataDir: string): void {
  for (const name of readdirSync(dataDir)) {
    const pid = /^nats-server_(\d+)\.ports$/.exec(name)?.[1];
    if (pid === undefined || !aliveNatsServer(Number(pid))) continue;
    const url = listenedUrl(join(dataDir, name));
    const joining = url === undefined ? "" : `, or join it as a second instance with ${joinCommand(dataDir, url)}`;
    throw new UsageError(
      `--data-dir ${dataDir} is in use by the nats-server (pid ${pid}) of another leasehold serve${url === undefined ? "" : ` on ${url}`}: ` +
        `stop that serve, give this one a --data-dir of its own${joining}`,
    );
  }
}

/** The first client URL a nats-server's ports file names, if readable. */
function listenedUrl(portsFile: string): string | undefined {
  try {
    const urls = (JSON.parse(readFileSync(portsFile, "utf8")) as { nats?: unknown }).nats;
    return Array.isArray(urls) && typeof urls[0] === "string" ? urls[0] : undefined;
  } catch {
    return undefined;
  }
}

/** Starts nats-server with the package's nats.conf on `host:port`, its store in the data folder, and waits until it listens. */
export async function startLocalNats(options: LocalNatsOptions): Promise<LocalNats> {
  const host = options.host ?? "127.0.0.1";
  const { port, logger } = options;
  const dataDir = resolve(options.dataDir);
  try {
    makeDirectory(dataDir);
  } catch (e) {
    throw new UsageError(`--data-dir: cannot create ${dataDir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, {
      cause: e,
    });
  }
  if (await canConnect(host, port)) throw portInUse(host, port, dataDir);
  refuseSharedStore(dataDir);
  const binary = await natsServerBinary((line) => options.note?.(line));
  const password = keptPassword(dataDir, PASSWORD_FILE);
  const appendPassword = keptPassword(dataDir, APPEND_PASSWORD_FILE);
  const config = join(dataDir, "nats-server.conf");
  writeFileSync(config, localConfig(readFileSync(join(PROJECT_ROOT, "nats.conf"), "utf8"), host, port, join(dataDir, "jetstream")));
  removeStalePortsFiles(dataDir);

  // Its own process group: a Ctrl-C in the terminal reaches serve, which stops the service before nats-server.
  const wrapper = spawn("bash", [join(PROJECT_ROOT, "scripts/run-tied.sh"), binary, "-c", config, "--ports_file_dir", dataDir], {
    cwd: dataDir,
    detached: true,
    stdio: ["pipe", "pipe", "pipe"],
    // nats.conf names an auditor too: its password is the operator's (LEASEHOLD_AUDITOR_PASSWORD) or unusable.
    env: {
      LEASEHOLD_AUDITOR_PASSWORD: `pw${randomBytes(24).toString("hex")}`,
      ...process.env,
      LEASEHOLD_SERVICE_PASSWORD: password,
      LEASEHOLD_APPEND_PASSWORD: appendPassword,
    },
  });
  const exited = new Promise<number | null>((done) => wrapper.once("exit", (code) => done(code)));
  const stop = (graceMs = 5000) => stopWrapper(wrapper, exited, graceMs);
  options.onSpawn?.(stop);
  let stderr = "";
  wrapper.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const pid = await new Promise<number | undefined>((done) => {
    wrapper.stdout.once("data", (c: Buffer) => done(Number.parseInt(c.toString(), 10)));
    void exited.then(() => done(undefined));
  });
  const failed = (code: number | null) => {
    if (/address already in use/i.test(stderr)) return portInUse(host, port, dataDir);
    const reason = stderr.trim().split("\n").slice(-2).join(" ");
    return new CliError(`the local nats-server exited (code ${code}) before accepting connections: ${reason}`, EXIT.usage);
  };
  if (pid === undefined || !Number.isSafeInteger(pid)) throw failed(await exited);
  logger.info({ binary, pid, config, dataDir }, "started local nats-server");

  // Its ports file names our own nats-server's pid: proof that what listens is ours, not another server.
  const portsFile = join(dataDir, `nats-server_${pid}.ports`);
  const deadline = Date.now() + 15_000;
  for (;;) {
    const outcome = await Promise.race([exited.then((code) => ({ code })), sleep(50).then(() => undefined)]);
    if (outcome !== undefined) throw failed(outcome.code);
    if (existsSync(portsFile) && (await canConnect(host, port))) break;
    if (Date.now() > deadline) {
      await stop(1000);
      throw new CliError(
        `the local nats-server did not listen on ${host}:${port} within 15 s: ${stderr.trim().split("\n").slice(-2).join(" ")}`,
        EXIT.usage,
      );
    }
  }
  return { url: `nats://${host}:${port}`, user: SERVICE_USER, password, appendUser: APPEND_USER, appendPassword, pid, exited, stop };
}

/**
 * nats.conf with its `listen` and `store_dir` replaced. Throws when either is
 * missing (the shipped file has both), rather than run a server elsewhere.
 */
export function localConfig(conf: string, host: string, port: number, storeDir: string): string {
  const listen = /^(\s*)listen\s*[:=].*$/m;
  const store = /^(\s*)store_dir\s*[:=].*$/m;
  if (!listen.test(conf) || !store.test(conf)) throw new CliError("nats.conf has no listen or no store_dir line to set", EXIT.usage);
  return conf.replace(listen, `$1listen: ${JSON.stringify(`${host}:${port}`)}`).replace(store, `$1store_dir: ${JSON.stringify(storeDir)}`);
}

/** A service user's password for this data folder: made once, kept owner-only in `name` so a second instance can join. */
function keptPassword(dataDir: string, name: string): string {
  const file = join(dataDir, name);
  if (existsSync(file)) {
    const kept = readFileSync(file, "utf8").trim();
    if (kept !== "") return kept;
  }
  const password = `pw${randomBytes(24).toString("hex")}`;
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return password;
}

/** Ports files left by a nats-server that was killed (a clean stop removes its own). */
function removeStalePortsFiles(dataDir: string): void {
  for (const name of readdirSync(dataDir)) {
    const pid = /^nats-server_(\d+)\.ports$/.exec(name)?.[1];
    if (pid !== undefined && !alive(Number(pid))) rmSync(join(dataDir, name), { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Whether `pid` runs, and (where /proc tells) is a nats-server rather than a process that got a dead server's pid. */
function aliveNatsServer(pid: number): boolean {
  if (!alive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("nats-server");
  } catch {
    return true;
  }
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = netConnect({ host, port });
    socket.setTimeout(1000, () => {
      socket.destroy();
      done(true);
    });
    socket.once("connect", () => {
      socket.destroy();
      done(true);
    });
    socket.once("error", () => done(false));
  });
}

async function stopWrapper(wrapper: ChildProcess, exited: Promise<number | null>, graceMs: number): Promise<void> {
  if (wrapper.exitCode !== null || wrapper.signalCode !== null) return;
  // The wrapper stops nats-server (SIGTERM, then SIGKILL after 5 s) and exits.
  wrapper.kill("SIGTERM");
  const timer = setTimeout(() => {
    // Out of time: end both now (the whole process group: wrapper, watcher and nats-server).
    if (wrapper.pid !== undefined) {
      try {
        process.kill(-wrapper.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }, graceMs);
  timer.unref();
  await exited;
  clearTimeout(timer);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
