/**
 * A `leasehold serve` instance as a child process, started the way a
 * supervisor would (node on the package's bin entry, so signals reach the
 * service itself), with its instance id read from its "leasehold serving" log
 * line and its exit code and time recorded.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { LocalNatsCluster } from "../../src/cluster/local-cluster.ts";
import { chaosLogDir } from "./log-dir.ts";

/**
 * The `leasehold` entry to run: this checkout's, or another build's when
 * `LEASEHOLD_CHAOS_BIN` names one (to drill a released version, or a known
 * good commit while the working tree is mid-change).
 */
const BIN = process.env.LEASEHOLD_CHAOS_BIN ?? fileURLToPath(new URL("../../bin/leasehold.js", import.meta.url));

/** How a child process ended. */
export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Epoch ms. */
  readonly at: number;
}

/** Settings of one instance. */
export interface ServeSettings {
  /** `--nats`: one URL, or several separated by commas. */
  readonly nats: string;
  readonly prefix: string;
  readonly replicas?: number;
  /** More `serve` flags, e.g. `["--cooldown-ms", "3000"]`. */
  readonly args?: readonly string[];
  /** A name for reports ("A", "B", ...). */
  readonly name: string;
  /** How long to wait for "leasehold serving" (default 20000 ms). */
  readonly readyTimeoutMs?: number;
  /** More environment variables, e.g. the clock offset test hook. */
  readonly env?: Readonly<Record<string, string>>;
}

/** One running (or ended) `leasehold serve` process. */
export class ServeProcess {
  /** The service's instance id (its `$SRV` id), known once ready. */
  instanceId = "";
  readonly exited: Promise<ProcessExit>;
  private readonly child: ChildProcess;
  private log = "";
  private exitInfo: ProcessExit | undefined;

  private constructor(readonly settings: ServeSettings) {
    const args = [
      BIN,
      "serve",
      "--nats",
      settings.nats,
      "--prefix",
      settings.prefix,
      "--replicas",
      String(settings.replicas ?? 1),
      ...(settings.args ?? []),
    ];
    this.child = spawn(process.execPath, args, {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LEASEHOLD_LOG_LEVEL: process.env.LEASEHOLD_CHAOS_LOG_LEVEL ?? "info", ...settings.env },
    });
    // LEASEHOLD_CHAOS_LOG_DIR keeps each instance's whole log, <dir>/<name>.log, to read a failure in full.
    const logDir = chaosLogDir();
    const file = logDir === undefined ? undefined : createWriteStream(join(logDir, `${settings.name}.log`), { flags: "a" });
    const keep = (chunk: Buffer) => {
      this.log = (this.log + chunk.toString()).slice(-20_000);
      file?.write(chunk);
    };
    this.child.stdout?.on("data", keep);
    this.child.stderr?.on("data", keep);
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => {
        this.exitInfo = { code, signal, at: Date.now() };
        resolve(this.exitInfo);
      }),
    );
    process.once("exit", () => this.child.kill("SIGKILL"));
  }

  /** Starts an instance connected to every node of a local cluster (`--nats a,b,c`) and waits until it serves. */
  static startOn(cluster: LocalNatsCluster, settings: Omit<ServeSettings, "nats">): Promise<ServeProcess> {
    return ServeProcess.start({ ...settings, nats: cluster.urls.join(",") });
  }

  /** Starts an instance and waits until it logs that it serves. */
  static async start(settings: ServeSettings): Promise<ServeProcess> {
    const p = new ServeProcess(settings);
    await p.waitServing(settings.readyTimeoutMs ?? 20_000);
    return p;
  }

  get name(): string {
    return this.settings.name;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The exit once it happened. */
  get exit(): ProcessExit | undefined {
    return this.exitInfo;
  }

  /** The end of the process's log (pino JSON lines). */
  get logTail(): string {
    return this.log;
  }

  /** Sends a signal. */
  signal(signal: NodeJS.Signals): void {
    if (this.exitInfo === undefined) this.child.kill(signal);
  }

  /**
   * Sends SIGTERM and waits up to `graceMs` for the exit; a process still
   * running then is SIGKILLed (and reported with `timedOut`).
   */
  async terminate(graceMs = 10_000): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number; timedOut: boolean }> {
    const sent = Date.now();
    this.signal("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([this.exited, new Promise<"late">((r) => (timer = setTimeout(() => r("late"), graceMs)))]);
    clearTimeout(timer);
    if (outcome === "late") {
      this.signal("SIGKILL");
      const exit = await this.exited;
      return { code: exit.code, signal: exit.signal, ms: exit.at - sent, timedOut: true };
    }
    return { code: outcome.code, signal: outcome.signal, ms: outcome.at - sent, timedOut: false };
  }

  /** SIGKILLs the process and waits for it to be gone. */
  async kill(): Promise<void> {
    this.signal("SIGKILL");
    await this.exited;
  }

  private async waitServing(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.instanceId === "") {
      const line = this.log.split("\n").find((l) => l.includes('"leasehold serving"'));
      if (line !== undefined) {
        this.instanceId = (JSON.parse(line) as { instance?: string }).instance ?? "?";
        break;
      }
      if (this.exitInfo !== undefined)
        throw new Error(`serve ${this.name} exited (code ${this.exitInfo.code}) before serving:\n${this.log.slice(-3000)}`);
      if (Date.now() > deadline) {
        await this.kill();
        throw new Error(`serve ${this.name} did not serve within ${timeoutMs} ms:\n${this.log.slice(-3000)}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
