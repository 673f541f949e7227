/**
 * Shared plumbing of the benchmarks: a private nats-server on a free loopback
 * port with a temporary JetStream store, CPU accounting of that server, the
 * machine description printed with every result, and small statistics.
 */
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { natsServerBinary } from "../src/cli/local-nats.ts";

/** A nats-server child process owned by a benchmark. */
export interface BenchNats {
  readonly url: string;
  readonly binary: string;
  readonly version: string;
  readonly pid: number;
  /** CPU seconds (user + system) the server has used so far; undefined off Linux. */
  cpuSeconds(): number | undefined;
  /** Stops the server and deletes its store. */
  stop(): Promise<void>;
}

/** Starts nats-server with `listen: 127.0.0.1:-1`, a ports file and a temporary store, and waits for its URL. */
export async function startBenchNats(): Promise<BenchNats> {
  const binary = await natsServerBinary();
  const { stdout, stderr: versionErr } = await promisify(execFile)(binary, ["--version"]);
  const version = (stdout || versionErr).trim().replace(/^nats-server:\s*/, "");
  const dir = mkdtempSync(join(tmpdir(), "leasehold-bench-"));
  writeFileSync(
    join(dir, "server.conf"),
    ["listen: 127.0.0.1:-1", `ports_file_dir: "${dir}"`, `jetstream { store_dir: "${join(dir, "js")}" }`].join("\n"),
  );
  const child = spawn(binary, ["-c", join(dir, "server.conf")], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const cleanup = () => rmSync(dir, { recursive: true, force: true });

  const deadline = Date.now() + 15_000;
  let url: string | undefined;
  while (url === undefined) {
    if (child.exitCode !== null) {
      cleanup();
      throw new Error(`nats-server exited (code ${child.exitCode}) before listening:\n${stderr}`);
    }
    const ports = readdirSync(dir).find((f) => f.endsWith(".ports"));
    if (ports !== undefined) {
      const parsed = JSON.parse(readFileSync(join(dir, ports), "utf8")) as { nats?: string[] };
      url = parsed.nats?.[0];
    }
    if (url === undefined) {
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        cleanup();
        throw new Error(`nats-server did not start within 15 s:\n${stderr}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const pid = child.pid!;
  return {
    url,
    binary,
    version,
    pid,
    cpuSeconds: () => processCpuSeconds(pid),
    async stop() {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      }
      cleanup();
    },
  };
}

/** Linux's USER_HZ: /proc reports CPU time in these ticks (100 on every mainstream kernel). */
const CLOCK_TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) of another process, from /proc; undefined where /proc is missing. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may contain spaces; the rest follows its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return (utime + stime) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** The machine a result was measured on. */
export interface MachineInfo {
  readonly node: string;
  readonly natsServer: string;
  readonly cpuModel: string;
  readonly cores: number;
  readonly platform: string;
  readonly loadAvgAtStart: readonly number[];
}

/** Describes this machine and the server under test. */
export function machineInfo(natsServerVersion: string): MachineInfo {
  const all = cpus();
  return {
    node: process.version,
    natsServer: natsServerVersion,
    cpuModel: all[0]?.model.trim() ?? "unknown",
    cores: all.length,
    platform: `${process.platform} ${process.arch}`,
    loadAvgAtStart: loadavg().map((l) => Math.round(l * 100) / 100),
  };
}

/** The `q` quantile (0..1) of `values` by nearest rank; NaN when empty. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

/** The median of `values` (mean of the middle two when even); NaN when empty. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Rounds to `digits` decimals for printing. */
export function round(value: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** A markdown table from a header row and body rows. */
export function markdownTable(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const line = (cells: readonly (string | number)[]) => `| ${cells.map(String).join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}
