/**
 * Test helpers for the `leasehold` command as a user runs it: a child process
 * with its output captured, killed after the test if still running; free
 * loopback ports; whether a pid is still alive.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { exitOf } from "../support/child-exit.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, expect, vi } from "vitest";

/** The repository root. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The `leasehold` bin entry. */
export const BIN = join(ROOT, "bin/leasehold.js");

/** A spawned process with its captured output. */
export interface Proc {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout(): string;
  stderr(): string;
  /** The JSON log lines written to stdout so far. */
  logs(): Record<string, unknown>[];
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const task of cleanups.splice(0).reverse()) await task();
});

/** Runs `task` after the current test. */
export function defer(task: () => Promise<void> | void): void {
  cleanups.push(task);
}

/** The environment without the developer's LEASEHOLD_* and NATS_URL settings, plus `env`. */
export function cleanEnv(env: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("LEASEHOLD_") && !k.startsWith("npm_") && k !== "NATS_URL"),
  );
  return { ...base, ...env };
}

/** Spawns `command args` (killed with its process group after the test if still running). */
export function run(command: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Proc {
  const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: cleanEnv(options.env), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const exited = exitOf(child);
  defer(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await exited;
    }
  });
  return {
    child,
    exited,
    stdout: () => stdout,
    stderr: () => stderr,
    logs: () =>
      stdout
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** Runs `node bin/leasehold.js args`. */
export function leasehold(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Proc {
  return run(process.execPath, [BIN, ...args], options);
}

/** Waits until `proc` has logged a line with `msg` and returns it; fails early if it exits. */
export async function waitForLog(proc: Proc, msg: string, timeout = 30_000): Promise<Record<string, unknown>> {
  let found: Record<string, unknown> | undefined;
  await vi.waitFor(
    () => {
      found = proc.logs().find((l) => l.msg === msg);
      if (found !== undefined) return;
      if (proc.child.exitCode !== null)
        throw new Error(`exited (${proc.child.exitCode}) before logging "${msg}":\n${proc.stdout()}\n${proc.stderr()}`);
      throw new Error(`no "${msg}" yet`);
    },
    { timeout, interval: 50 },
  );
  return found!;
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A `leasehold serve` with its own nats-server, as the README starts it (on a free port, no dashboard). */
export interface LocalServe {
  readonly proc: Proc;
  /** Its folder (where `.leasehold/` is). */
  readonly cwd: string;
  readonly url: string;
}

/** Starts `leasehold serve` in a new folder on a free port, waits until it serves, and stops it (SIGTERM) after the test. */
export async function startLocalServe(name: string, env: Record<string, string> = {}): Promise<LocalServe> {
  return serveIn(tempDir(name), await freePort(), env);
}

/**
 * Stops `serve` (SIGTERM, as Ctrl-C would) and starts it again in the same
 * folder on the same port, so on the same stream; `env` is the new
 * process's environment (e.g. a clock moved on).
 */
export async function restartLocalServe(serve: LocalServe, env: Record<string, string> = {}): Promise<LocalServe> {
  serve.proc.child.kill("SIGTERM");
  const { code } = await serve.proc.exited;
  expect(code, `serve stopped on SIGTERM:\n${serve.proc.stderr()}`).toBe(0);
  return serveIn(serve.cwd, Number(new URL(serve.url).port), env);
}

async function serveIn(cwd: string, port: number, env: Record<string, string> = {}): Promise<LocalServe> {
  const proc = leasehold(["serve", "--nats-port", String(port), "--http", "off", "--log-format", "json"], { cwd, env });
  defer(async () => {
    proc.child.kill("SIGTERM");
    await proc.exited;
  });
  await waitForLog(proc, "leasehold serving");
  return { proc, cwd, url: `nats://127.0.0.1:${port}` };
}

/** Waits until something accepts connections on 127.0.0.1:`port`; fails at once, with its output, if `proc` exits first. */
export async function waitListening(port: number, proc?: Proc, timeout = 30_000): Promise<void> {
  const listening = () =>
    new Promise<boolean>((done) => {
      const socket = connect({ host: "127.0.0.1", port });
      socket.once("connect", () => {
        socket.destroy();
        done(true);
      });
      socket.once("error", () => done(false));
    });
  await vi.waitFor(
    async () => {
      if (proc !== undefined && proc.child.exitCode !== null)
        throw new Error(`exited (${proc.child.exitCode}) before 127.0.0.1:${port} listened:\n${proc.stdout()}\n${proc.stderr()}`);
      expect(await listening(), `127.0.0.1:${port} listening`).toBe(true);
    },
    { timeout, interval: 50 },
  );
}

/** Whether a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Waits until none of `pids` is alive. */
export async function waitGone(pids: number[], timeout = 15_000): Promise<void> {
  await vi.waitFor(
    () => {
      const left = pids.filter(alive);
      if (left.length > 0) throw new Error(`still running: ${left.join(", ")}`);
    },
    { timeout, interval: 50 },
  );
}

/** A temporary folder removed after the test. */
export function tempDir(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `leasehold-${name}-`));
  defer(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
