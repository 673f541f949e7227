/**
 * Shared plumbing of the benchmarks: a private nats-server on a free loopback
 * port with a temporary JetStream store, CPU accounting of that server, the
 * machine description printed with every result, the common command line,
 * the bench's lifetime (connections, service, ceiling, cleanup), the
 * one-publish ceiling responder, closed-loop measurement, and small
 * statistics and printing.
 */
import { execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs, promisify, type ParseArgsConfig } from "node:util";
import { connect } from "@nats-io/transport-node";
import { headers as natsHeaders, nuid, type Msg, type NatsConnection } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { pino } from "pino";
import { natsServerBinary } from "../src/cluster/nats-server-binary.ts";
import type { ServiceConfig } from "../src/config.ts";
import { JetStreamEventLog } from "../src/events/jetstream-event-log.ts";
import type { RunningService, ServiceObserver } from "../src/service/start-service.ts";
import { startLocalCluster } from "../src/cluster/local-cluster.ts";

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

/** How a bench's nats-server is configured beyond its defaults. */
export interface BenchNatsOptions {
  /** JetStream's `sync_interval` (`always`: fsync every write before the ack); the server's default (2 minutes) when not given. */
  readonly syncInterval?: string;
  /** The whole configuration text for a server whose folder is `dir` (its store goes there), instead of {@link benchNatsConfig}. */
  readonly configure?: (dir: string) => string;
  /** Added to the server's environment (the passwords a configuration reads). */
  readonly env?: Readonly<Record<string, string>>;
}

/** The configuration file of a bench's nats-server whose ports file and store live in `dir`. */
export function benchNatsConfig(dir: string, options: BenchNatsOptions = {}): string {
  const sync = options.syncInterval === undefined ? "" : `, sync_interval: ${options.syncInterval}`;
  return ["listen: 127.0.0.1:-1", `ports_file_dir: "${dir}"`, `jetstream { store_dir: "${join(dir, "js")}"${sync} }`].join("\n");
}

/** Starts nats-server with `listen: 127.0.0.1:-1`, a ports file and a temporary store, and waits for its URL. */
export async function startBenchNats(options: BenchNatsOptions = {}): Promise<BenchNats> {
  const binary = await natsServerBinary();
  const { stdout, stderr: versionErr } = await promisify(execFile)(binary, ["--version"]);
  const version = (stdout || versionErr).trim().replace(/^nats-server:\s*/, "");
  const dir = mkdtempSync(join(tmpdir(), "leasehold-bench-"));
  writeFileSync(join(dir, "server.conf"), options.configure?.(dir) ?? benchNatsConfig(dir, options));
  const child = spawn(binary, ["-c", join(dir, "server.conf"), "--ports_file_dir", dir], {
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "ignore", "pipe"],
  });
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

/**
 * Starts a three-node (or `size`-node) JetStream cluster on free loopback
 * ports through the project's local-cluster module, as a {@link BenchNats}:
 * its URL lists every node and its CPU is the sum over the nodes.
 */
export async function startBenchCluster(size: number): Promise<BenchNats> {
  const cluster = await startLocalCluster({ size });
  const binary = await natsServerBinary();
  const { stdout, stderr: versionErr } = await promisify(execFile)(binary, ["--version"]);
  const version = (stdout || versionErr).trim().replace(/^nats-server:\s*/, "");
  const pids = cluster.nodes.map((n) => n.pid!);
  return {
    url: cluster.urls.join(","),
    binary,
    version: `${version} (${size}-node cluster)`,
    pid: pids[0]!,
    cpuSeconds: () => {
      const each = pids.map(processCpuSeconds);
      return each.some((c) => c === undefined) ? undefined : each.reduce((a, b) => a! + b!, 0);
    },
    stop: () => cluster.stop(),
  };
}

/**
 * Waits until the machine's 1-minute load average is below `maxLoad`,
 * checking every `intervalMs`, for at most `maxWaitMs`; then runs anyway.
 * Resolves with the load at the end of the wait, so results can record it.
 */
export async function waitForQuietMachine(
  progress: (line: string) => void,
  // BENCH_MAX_WAIT_MS shortens the wait when a whole series of runs shares one time budget.
  { maxLoad = 1.5, intervalMs = 30_000, maxWaitMs = Number(process.env.BENCH_MAX_WAIT_MS ?? 600_000) } = {},
): Promise<{ load1m: number; waitedMs: number; quiet: boolean }> {
  const t0 = Date.now();
  // BENCH_NO_LOAD_WAIT: for smoke runs of a bench's code, whose figures do not count.
  if (process.env.BENCH_NO_LOAD_WAIT !== undefined) return { load1m: round(loadavg()[0] ?? 0, 2), waitedMs: 0, quiet: false };
  for (;;) {
    const load1m = round(loadavg()[0] ?? 0, 2);
    const waitedMs = Date.now() - t0;
    if (load1m < maxLoad) return { load1m, waitedMs, quiet: true };
    if (waitedMs + intervalMs > maxWaitMs) {
      progress(`load ${load1m} still >= ${maxLoad} after ${Math.round(waitedMs / 1000)} s; running anyway`);
      return { load1m, waitedMs, quiet: false };
    }
    progress(`load ${load1m} >= ${maxLoad}; waiting ${intervalMs / 1000} s`);
    await sleep(intervalMs);
  }
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

/** A dash for a table cell with no figure. */
export const NO_FIGURE = "–";

/** A figure for a table cell: `digits` decimals, or a dash when there is none. */
export function figure(v: number | undefined, digits = 0): string {
  return v === undefined || Number.isNaN(v) ? NO_FIGURE : v.toFixed(digits);
}

/** A markdown table from a header row and body rows. */
export function markdownTable(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const line = (cells: readonly (string | number)[]) => `| ${cells.map(String).join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/** The machine line that heads every printed result. */
export function machineLine(machine: MachineInfo): string {
  return `node ${machine.node}, nats-server ${machine.natsServer}, ${machine.cpuModel} x ${machine.cores} cores (${machine.platform}), load average at start ${machine.loadAvgAtStart.join(" ")}`;
}

/** A printed result: the machine, what was run, the summary table, then every measurement. */
export function reportText(machine: MachineInfo, settingsLine: string, summaryTable: string, runTable: string): string {
  return [
    machineLine(machine),
    settingsLine,
    "",
    summaryTable,
    "",
    "Every measurement (CPU in percent of one core):",
    "",
    runTable,
    "",
  ].join("\n");
}

/** Prints a result as JSON on stdout, dated. */
export function printJson(fields: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ date: new Date().toISOString(), ...fields }, null, 2)}\n`);
}

/** A bad command line: reported without a stack. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** The options every closed-loop benchmark takes. */
export const BENCH_OPTIONS = {
  // 4 s windows keep a whole run (interleaved repeats of every case) within a few minutes on a shared machine.
  "duration-ms": { type: "string", default: "4000" },
  "warmup-ms": { type: "string", default: "1000" },
  concurrency: { type: "string", default: "1,64" },
  repeats: { type: "string", default: "3" },
  json: { type: "boolean", default: false },
  help: { type: "boolean", default: false },
} as const;

/** The settings parsed from {@link BENCH_OPTIONS} (`--json` is left to each bench, to keep its place in the printed settings). */
export interface CommonSettings {
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly concurrency: readonly number[];
  readonly repeats: number;
}

type OptionsConfig = NonNullable<ParseArgsConfig["options"]>;
type BenchArgs<O extends OptionsConfig> = ReturnType<typeof parseArgs<{ options: typeof BENCH_OPTIONS & O; strict: true }>>;

/** Parses {@link BENCH_OPTIONS} plus a bench's own options; prints `usage` and exits on `--help`. */
export function parseBenchArgs<const O extends OptionsConfig>(
  usage: string,
  options: O,
): { values: BenchArgs<O>["values"]; common: CommonSettings } {
  let parsed;
  try {
    parsed = parseArgs({ options: { ...BENCH_OPTIONS, ...options }, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const { values } = parsed;
  // The common options' types do not resolve through the generic O, so they are read as on their own.
  const common = values as BenchArgs<Record<never, never>>["values"];
  if (common.help) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  return {
    values,
    common: {
      durationMs: positiveInt("duration-ms", common["duration-ms"]),
      warmupMs: common["warmup-ms"] === "0" ? 0 : positiveInt("warmup-ms", common["warmup-ms"]),
      concurrency: common.concurrency.split(",").map((c) => positiveInt("concurrency", c.trim())),
      repeats: positiveInt("repeats", common.repeats),
    },
  };
}

type OwnArgs<O extends OptionsConfig> = ReturnType<typeof parseArgs<{ options: O & { help: { type: "boolean" } }; strict: true }>>;

/** Parses a bench's own options (strict) plus `--help`, which prints `usage` and exits; a bad line is a {@link UsageError}. */
export function parseOwnArgs<const O extends OptionsConfig>(usage: string, options: O): OwnArgs<O>["values"] {
  let parsed;
  try {
    parsed = parseArgs({ options: { ...options, help: { type: "boolean" } }, strict: true });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const values = parsed.values as OwnArgs<O>["values"] & { readonly help?: boolean };
  if (values.help === true) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  return values;
}

/** The value of `--<flag>` as a positive whole number. */
export function positiveInt(flag: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${flag} must be a positive whole number, got ${raw}`);
  return n;
}

/** The value of `--<flag>`, one of `allowed`. */
export function oneOf<T extends string>(flag: string, noun: string, raw: string, allowed: readonly T[]): T {
  if (!allowed.includes(raw as T)) throw new UsageError(`--${flag}: unknown ${noun} ${raw}`);
  return raw as T;
}

/** The comma-separated value of `--<flag>`, each item one of `allowed`. */
export function listOf<T extends string>(flag: string, noun: string, raw: string, allowed: readonly T[]): T[] {
  return raw.split(",").map((s) => oneOf(flag, noun, s.trim(), allowed));
}

/** Runs a bench's main: a bad command line is reported in one line, anything else with its stack; both exit 1. */
export function runBench(main: () => Promise<void>): void {
  // Through a promise, so a main that throws before its first await is reported the same way.
  Promise.resolve()
    .then(main)
    .catch((e: unknown) => {
      process.stderr.write(e instanceof UsageError ? `${e.message} (see --help)\n` : `bench failed: ${(e as Error).stack ?? String(e)}\n`);
      process.exitCode = 1;
    });
}

/** How long a benchmark request waits for its reply. */
export const REQUEST_TIMEOUT_MS = 10_000;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A request or reply body as JSON bytes. */
export const json = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));

/** Did a service reply succeed (no `Nats-Service-Error-Code` header)? */
export function succeeded(msg: Msg): boolean {
  return !msg.headers?.get("Nats-Service-Error-Code");
}

/** Something a bench started and stops at the end. */
export interface Stoppable {
  stop(): Promise<void>;
}

/** What a bench's body gets from {@link withBench}. */
export interface BenchContext {
  readonly nats: BenchNats;
  readonly machine: MachineInfo;
  /** A fresh subject prefix for this run's service and ceiling. */
  readonly prefix: string;
  /** Writes a progress line to stderr. */
  progress(line: string): void;
  /** A new connection to the bench's server (as `user` when given), drained at the end. */
  connect(name: string, user?: BenchUser): Promise<NatsConnection>;
  /**
   * Starts an in-process service instance (silent logger) on a connection of its own (two, as `users` when given);
   * stopped at the end. Called again, it starts another instance of the same service (requests spread over them).
   */
  startService(config: ServiceConfig, users?: ServiceUsers): Promise<RunningService>;
  /** Starts the ceiling responder on a connection of its own (two, as `users` when given, like the service); stopped at the end. */
  startCeiling(options: CeilingOptions, users?: ServiceUsers): Promise<void>;
  /** The appends the service's runtime has finished so far, and how many of them failed their expected-sequence check. */
  appendCounts(): AppendCounts;
}

/** Appends finished and, of them, expected-sequence conflicts (the turn then catches up and decides again). */
export interface AppendCounts {
  readonly appends: number;
  readonly conflicts: number;
}

/** A service observer that only counts appends and conflicts (the metrics registry's cost stays out of the bench). */
export function appendCounter(): { observer: ServiceObserver; counts: () => AppendCounts } {
  let appends = 0;
  let conflicts = 0;
  return {
    observer: {
      commandFinished: () => undefined,
      appendFinished: () => appends++,
      appendConflict: () => conflicts++,
    },
    counts: () => ({ appends, conflicts }),
  };
}

/** A user of a server with authorization, and the reply prefix its permissions expect. */
export interface BenchUser {
  readonly user: string;
  readonly pass: string;
  readonly inboxPrefix: string;
}

/** The two users a service runs as: one answers requests, one appends to JetStream. */
export interface ServiceUsers {
  readonly answering: BenchUser;
  readonly appending: BenchUser;
}

/**
 * Starts a private nats-server, runs `body`, then stops the ceiling, the
 * service, every connection and the server (also on Ctrl-C).
 * `noAsyncTraces`, when given, is set on every connection; `server`, when
 * given, starts the server instead (it gets the run's subject prefix).
 */
export async function withBench(
  connection: { noAsyncTraces?: boolean; nodes?: number; waitForQuiet?: boolean; server?: (prefix: string) => Promise<BenchNats> },
  body: (bench: BenchContext) => Promise<void>,
): Promise<void> {
  const { nodes = 1, waitForQuiet = true, server, ...connectionOptions } = connection;
  if (waitForQuiet) await waitForQuietMachine((line) => process.stderr.write(`${line}\n`));
  const prefix = `bench${randomUUID().replaceAll("-", "").slice(0, 8)}`;
  const nats = server !== undefined ? await server(prefix) : nodes === 1 ? await startBenchNats() : await startBenchCluster(nodes);
  const connections: NatsConnection[] = [];
  const services: RunningService[] = [];
  let ceiling: Stoppable | undefined;
  const stopAll = async () => {
    await ceiling?.stop().catch(() => undefined);
    await Promise.all(services.map((service) => service.stop().catch(() => undefined)));
    await Promise.all(connections.map((c) => c.drain().catch(() => undefined)));
    await nats.stop();
  };
  const onSignal = () => void stopAll().finally(() => process.exit(130));
  process.once("SIGINT", onSignal);
  try {
    const machine = machineInfo(nats.version);
    const progress = (line: string) => process.stderr.write(`${line}\n`);
    const counter = appendCounter();
    progress(`nats-server ${nats.version} at ${nats.url} (pid ${nats.pid})`);
    const connectAs = async (name: string, user?: BenchUser) => {
      const nc = await connect({ servers: nats.url.split(","), name, ...connectionOptions, ...user });
      connections.push(nc);
      return nc;
    };
    await body({
      nats,
      machine,
      prefix,
      progress,
      connect: connectAs,
      async startService(config, users) {
        const { startService } = await serviceModule(progress);
        const nc = await connectAs("leasehold-service", users?.answering);
        const appendNc = users === undefined ? undefined : await connectAs("leasehold-append", users.appending);
        const service = await startService({
          nc,
          ...(appendNc === undefined ? {} : { appendNc }),
          config,
          logger: pino({ level: "silent" }),
          observer: counter.observer,
        });
        services.push(service);
        return service;
      },
      async startCeiling(options, users) {
        const nc = await connectAs("bench-ceiling", users?.answering);
        const appendNc = users === undefined ? nc : await connectAs("bench-ceiling-append", users.appending);
        ceiling = await startCeiling(nc, prefix, options, appendNc);
      },
      appendCounts: counter.counts,
    });
  } finally {
    process.off("SIGINT", onSignal);
    await stopAll();
  }
}

const SRC = fileURLToPath(new URL("../src", import.meta.url));
const BUILT_SERVICE = fileURLToPath(new URL("../dist/service/start-service.js", import.meta.url));

/**
 * The service as production runs it: the built dist/ (what `npm ci` builds),
 * unless src/ changed since the build, as bin/leasehold.js decides. Through
 * tsx, esbuild wraps every named closure the service creates per request in a
 * `__name` call; the ceiling creates none per request, so running only the
 * service built keeps the comparison fair (bench/README.md, "Runtime v3").
 */
async function serviceModule(progress: (line: string) => void): Promise<typeof import("../src/service/start-service.ts")> {
  if (existsSync(BUILT_SERVICE)) {
    const builtAt = statSync(BUILT_SERVICE).mtimeMs;
    const changed = readdirSync(SRC, { withFileTypes: true, recursive: true }).some(
      (e) => e.isFile() && statSync(join(e.parentPath, e.name)).mtimeMs > builtAt,
    );
    if (!changed) return (await import(BUILT_SERVICE)) as typeof import("../src/service/start-service.ts");
  }
  progress("the service runs from src/ through tsx: dist/ is missing or older than src/ (npm run build)");
  return import("../src/service/start-service.ts");
}

/** How a ceiling responder answers. */
export interface CeilingOptions {
  /** The duplicate window of its stream (as the event stream's). */
  readonly dedupWindowMs: number;
  /** Replicas of its stream (as the event stream's; default 1). */
  readonly replicas?: number;
  /** The ops it answers, each on `<prefix>.ceiling.v1.<op>`. */
  readonly ops: readonly string[];
  /** The request body field whose value names the subject to publish to (one per lock, proxy or route). */
  readonly keyField: string;
  /** The envelope it publishes: the shape and size of the event a real turn appends. */
  readonly event: unknown;
  /** The reply body after the publish; `{seq}` when not given. */
  readonly reply?: (seq: number) => unknown;
}

/** The stream of the ceiling responder of `prefix`. */
export function ceilingStreamOf(prefix: string): string {
  return `${prefix.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_CEILING`;
}

/**
 * The ceiling: a callback-mode queue subscriber that, per request, reads the
 * key, does exactly one JetStream publish (message id, expected last subject
 * sequence on that key's own subject, an event-sized payload) to a stream
 * created like the event stream, and replies. Nothing a turn does is cheaper
 * than this, so leasehold's throughput over this is its efficiency.
 */
export async function startCeiling(
  nc: NatsConnection,
  prefix: string,
  options: CeilingOptions,
  appendNc: NatsConnection = nc,
): Promise<Stoppable> {
  // The stream is created by the event log's own code, so it is configured exactly like the event stream.
  await JetStreamEventLog.open(appendNc, {
    stream: ceilingStreamOf(prefix),
    subjects: `${prefix}.ceiling.events.>`,
    dedupWindowMs: options.dedupWindowMs,
    replicas: options.replicas ?? 1,
  });
  const js = jetstream(appendNc);
  const payload = json(options.event);
  const reply = options.reply ?? ((seq: number) => ({ seq }));
  const lastSeq = new Map<string, number>();
  const serve = (msg: Msg) => {
    const key = (JSON.parse(decoder.decode(msg.data)) as Record<string, string>)[options.keyField];
    const subject = `${prefix}.ceiling.events.${key}`;
    js.publish(subject, payload, { msgID: nuid.next(), expect: { lastSubjectSequence: lastSeq.get(subject) ?? 0 }, timeout: 5000 }).then(
      (ack) => {
        lastSeq.set(subject, ack.seq);
        msg.respond(json(reply(ack.seq)));
      },
      (e: Error) => {
        const h = natsHeaders();
        h.set("Nats-Service-Error-Code", "503");
        h.set("Nats-Service-Error", e.message.replace(/[\r\n]+/g, " "));
        msg.respond(json({ error: { code: "UNAVAILABLE", message: e.message } }), { headers: h });
      },
    );
  };
  const subs = options.ops.map((op) =>
    nc.subscribe(`${prefix}.ceiling.v1.${op}`, { queue: "ceiling", callback: (_err, msg) => serve(msg) }),
  );
  return {
    async stop() {
      await Promise.all(subs.map((s) => s.drain()));
    },
  };
}

/** The token in a ceiling's default `{seq}` reply. */
export const ceilingSeq = (body: { seq?: unknown }): string | undefined => (typeof body.seq === "number" ? String(body.seq) : undefined);

/** A subject and the body sent to it. */
export interface Request {
  readonly subject: string;
  readonly body: Uint8Array;
}

/**
 * Two timed requests in a row, the second built from a token that
 * `tokenOf` reads from the first reply's body (undefined: failed); resolves
 * with how many failed (0 or 1: after a failed first, no second is sent).
 */
export async function requestPair<B>(
  nc: NatsConnection,
  sample: (latencyMs: number) => void,
  first: Request,
  tokenOf: (body: B) => string | undefined,
  second: (token: string) => Request,
): Promise<number> {
  let t0 = performance.now();
  let token: string | undefined;
  try {
    const reply = await nc.request(first.subject, first.body, { timeout: REQUEST_TIMEOUT_MS });
    sample(performance.now() - t0);
    token = tokenOf(JSON.parse(decoder.decode(reply.data)) as B);
    if (!succeeded(reply) || token === undefined) return 1;
  } catch {
    return 1;
  }
  t0 = performance.now();
  try {
    const next = second(token);
    const reply = await nc.request(next.subject, next.body, { timeout: REQUEST_TIMEOUT_MS });
    sample(performance.now() - t0);
    return succeeded(reply) ? 0 : 1;
  } catch {
    return 1;
  }
}

/** One unit of a worker's closed loop (a pair, or a single request): reports each request's latency through `sample`, resolves with how many of its requests failed. */
export type WorkFn = (worker: number, sample: (latencyMs: number) => void) => Promise<number>;

/** What one timed window of a closed loop measured. */
export interface Window {
  readonly seconds: number;
  /** Units of work with no failed request. */
  readonly completed: number;
  readonly failedRequests: number;
  /** Latencies sampled (requests that got a reply). */
  readonly samples: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** CPU seconds of this process (load generator plus service or responder). */
  readonly nodeCpuSeconds: number;
  /** CPU of this process, percent of one core. */
  readonly nodeCpuPct: number;
  /** CPU of nats-server, percent of one core (NaN off Linux). */
  readonly natsCpuPct: number;
  readonly loadAvg1m: number;
}

/** The figures of a window every bench keeps in each of its runs. */
export type WindowFigures = Pick<Window, "p50Ms" | "p99Ms" | "nodeCpuPct" | "natsCpuPct" | "loadAvg1m">;

/**
 * Drives `concurrency` closed-loop workers: warm up for `warmupMs`, call
 * `beforeMeasure`, then count work and sample latencies for `durationMs`.
 */
export async function closedLoop(
  work: WorkFn,
  concurrency: number,
  timing: Pick<CommonSettings, "warmupMs" | "durationMs">,
  nats: Pick<BenchNats, "cpuSeconds">,
  beforeMeasure?: () => Promise<void>,
): Promise<Window> {
  const state = { phase: "warmup" as "warmup" | "measure" | "stop" };
  const latencies: number[] = [];
  let completed = 0;
  let failedRequests = 0;
  const sample = (ms: number) => {
    if (state.phase === "measure") latencies.push(ms);
  };
  const workers = Array.from({ length: concurrency }, async (_, worker) => {
    while (state.phase !== "stop") {
      const failed = await work(worker, sample);
      if ((state.phase as string) === "measure") {
        if (failed === 0) completed++;
        failedRequests += failed;
      }
    }
  });
  await sleep(timing.warmupMs);
  await beforeMeasure?.();
  state.phase = "measure";
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const nats0 = nats.cpuSeconds();
  await sleep(timing.durationMs);
  state.phase = "stop";
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const nats1 = nats.cpuSeconds();
  await Promise.all(workers);
  const nodeCpuSeconds = (cpu.user + cpu.system) / 1e6;
  return {
    seconds,
    completed,
    failedRequests,
    samples: latencies.length,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    nodeCpuSeconds,
    nodeCpuPct: (nodeCpuSeconds / seconds) * 100,
    natsCpuPct: nats0 === undefined || nats1 === undefined ? Number.NaN : ((nats1 - nats0) / seconds) * 100,
    loadAvg1m: round(loadavg()[0] ?? Number.NaN, 2),
  };
}

/** The order of the systems in a repeat: alternated, so slow drift in the machine's load does not favour one. */
export function alternate<T>(systems: readonly T[], repeat: number): readonly T[] {
  return repeat % 2 === 1 ? systems : [...systems].reverse();
}

/** The figures of a window in a progress line: latencies, then CPU. */
export function windowLine(w: WindowFigures): string {
  return `p50 ${round(w.p50Ms, 2)} ms, p99 ${round(w.p99Ms, 2)} ms, node ${round(w.nodeCpuPct)}% nats ${round(w.natsCpuPct)}%`;
}

/**
 * Median over the repeats of `value` of the leasehold run divided by `value`
 * of the ceiling run of the same repeat, where both ran and the ceiling
 * completed any pairs; undefined when no repeat has both.
 */
export function medianRatio<R extends { readonly system: string; readonly repeat: number; readonly pairsPerSec: number }>(
  runs: readonly R[],
  repeats: number,
  value: (run: R) => number,
): number | undefined {
  const ratios: number[] = [];
  for (let repeat = 1; repeat <= repeats; repeat++) {
    const l = runs.find((r) => r.system === "leasehold" && r.repeat === repeat);
    const c = runs.find((r) => r.system === "ceiling" && r.repeat === repeat);
    if (l !== undefined && c !== undefined && c.pairsPerSec > 0) ratios.push(value(l) / value(c));
  }
  return ratios.length === 0 ? undefined : median(ratios);
}
