/**
 * Starts the project's own nats-server from `nats.conf` for `leasehold serve`
 * without `--nats`: finds a >= 2.10 binary through `scripts/nats-server.sh`,
 * runs it from the project root (so `.leasehold/` holds its data), waits until
 * it accepts connections, and stops it on exit.
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { connect as netConnect } from "node:net";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Logger } from "pino";

/** The project root (where nats.conf and scripts/ live). */
export const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** A nats-server child process, and the credentials of the service user its nats.conf defines. */
export interface LocalNats {
  readonly url: string;
  readonly user: string;
  readonly password: string;
  stop(): Promise<void>;
}

/** Prints the path of a usable nats-server binary (fetching one if needed). */
export async function natsServerBinary(): Promise<string> {
  const { stdout } = await promisify(execFile)("bash", [`${PROJECT_ROOT}scripts/nats-server.sh`], {
    cwd: PROJECT_ROOT,
    maxBuffer: 1 << 20,
  });
  return stdout.trim();
}

/** Starts nats-server with the project's nats.conf and waits for it to listen. */
export async function startLocalNats(logger: Logger, host = "127.0.0.1", port = 4222): Promise<LocalNats> {
  const binary = await natsServerBinary();
  // nats.conf reads the service user's password from the environment: a new one at every start.
  const password = randomBytes(24).toString("base64url");
  const child = spawn(binary, ["-c", "nats.conf"], {
    cwd: PROJECT_ROOT,
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, LEASEHOLD_SERVICE_PASSWORD: password },
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  logger.info({ binary, pid: child.pid, config: `${PROJECT_ROOT}nats.conf` }, "started local nats-server");
  const deadline = Date.now() + 15_000;
  for (;;) {
    const outcome = await Promise.race([exited.then((code) => ({ exited: code })), canConnect(host, port).then((ok) => ({ ok }))]);
    if ("exited" in outcome) {
      throw new Error(`local nats-server exited (code ${outcome.exited}) before accepting connections:\n${stderr.trim()}`);
    }
    if (outcome.ok) break;
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`local nats-server did not listen on ${host}:${port} within 15 s:\n${stderr.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { url: `nats://${host}:${port}`, user: "leasehold", password, stop: () => stopChild(child, exited) };
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect({ host, port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}
