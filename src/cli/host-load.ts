/**
 * `leasehold host-load`: the agent side of host loads (docs/protocol.md,
 * "Host load"). Runs on (or for) one host and publishes its load to
 * `<prefix>.loads.<host>` every period: a fixed `--load`, or the number a
 * shell `--command` prints (queue depth, KV-cache use, whatever the operator
 * measures; lower is better). A failed or slow measurement publishes
 * nothing, so the service's copy goes stale and counts as unknown, which is
 * the truth. Until SIGINT or SIGTERM, or after one publication with `--once`.
 */
import { execFile } from "node:child_process";
import type { NatsConnection } from "@nats-io/nats-core";
import type { Command } from "commander";
import { hostLoadBody, isHostLoad } from "../contract/host-load.ts";
import { Subjects } from "../contract/subjects.ts";
import { withDeadline } from "../events/deadline.ts";
import { parseDuration } from "../tools/time.ts";
import { CliError, EXIT, oneLine, UsageError } from "./cli-errors.ts";
import { connectTo, LOCAL_NATS_URL, natsTarget } from "./connection-options.ts";
import { watchConnection } from "./connection-watch.ts";
import { addConnectionOptions, CONNECTION_HELP, runReported, type CommonFlags } from "./options.ts";

/** Flags of `host-load`. */
export interface HostLoadFlags extends CommonFlags {
  prefix: string;
  host?: string;
  every: string;
  command?: string;
  load?: string;
  timeout?: string;
  once?: boolean;
}

/** What the flags ask for, checked before connecting. */
interface HostLoadPlan {
  readonly host: string;
  readonly everyMs: number;
  readonly timeoutMs: number;
  readonly measure: (timeoutMs: number) => Promise<number>;
  readonly once: boolean;
}

/** Shortest and longest period (a load older than the service's --load-stale-ms, 15 s by default, is unknown). */
const MIN_EVERY_MS = 100;
const MAX_EVERY_MS = 3_600_000;
/** The most output a --command may print. */
const MAX_OUTPUT_BYTES = 64 * 1024;
/** How long the last publications may take to reach the server when it stops. */
const FLUSH_MS = 2000;

/** Adds `host-load` to the program. */
export function addHostLoadCommand(program: Command): void {
  const command = program
    .command("host-load")
    .description(
      "Publish one host's load to <prefix>.loads.<host> every period, for the least-load route chooser and host.list: " +
        "a fixed --load, or the number a shell --command prints (lower is better). Runs until Ctrl-C.",
    )
    .option("--host <name>", "the host whose load this is, as host.set names it (required)")
    .option("--every <duration>", "how often to measure and publish (100ms to 1h); keep it well under the service's --load-stale-ms", "1s")
    .option("--command <shell>", "a shell command that prints the load: one number >= 0 (run with /bin/sh -c)")
    .option("--load <n>", "publish this fixed load instead of running a command")
    .option("--timeout <duration>", "how long a --command may run before it is killed and the period skipped (default: --every)")
    .option("--once", "measure and publish once, then exit (1 when the measurement failed)");
  addConnectionOptions(command);
  command.addHelpText(
    "after",
    `
A measurement that fails (the command exits non-zero, prints anything but one number >= 0, or outlasts --timeout) publishes nothing and says why on stderr; the service then treats the host's load as unknown once the last one is older than its --load-stale-ms.

Examples:
  leasehold host-load --host gpu-7 --command "nvidia-smi --id=0 --query-gpu=utilization.gpu --format=csv,noheader,nounits"
  leasehold host-load --host gpu-7 --every 2s --command "cat /run/inference/queue-depth"
  leasehold host-load --host gpu-7 --load 0 --once
${CONNECTION_HELP}`,
  );
  command.action((flags: HostLoadFlags) => runReported("host-load", flags, () => hostLoad(flags)));
}

/** Reads the flags into a plan, or a usage error naming the flag. */
export function planOf(flags: HostLoadFlags): HostLoadPlan {
  const host = flags.host;
  if (host === undefined || host.length === 0) throw new UsageError("--host is required (the host's name, as host.set names it)");
  if (Buffer.byteLength(host, "utf8") > 256 || !host.isWellFormed()) throw new UsageError("--host: at most 256 bytes of valid Unicode");
  const everyMs = duration(flags.every, "--every");
  if (everyMs < MIN_EVERY_MS || everyMs > MAX_EVERY_MS) throw new UsageError(`--every: between 100ms and 1h, got ${flags.every}`);
  const timeoutMs = flags.timeout === undefined ? everyMs : duration(flags.timeout, "--timeout");
  if (timeoutMs < 1) throw new UsageError(`--timeout: at least 1ms, got ${flags.timeout}`);
  if ((flags.command === undefined) === (flags.load === undefined)) throw new UsageError("give either --command or --load (one of them)");
  let measure: (timeoutMs: number) => Promise<number>;
  if (flags.load !== undefined) {
    const load = Number(flags.load);
    if (flags.load.trim() === "" || !isHostLoad(load)) throw new UsageError(`--load: a number >= 0, got ${JSON.stringify(flags.load)}`);
    measure = () => Promise.resolve(load);
  } else {
    const shell = flags.command!;
    if (shell.trim() === "") throw new UsageError("--command must not be empty");
    measure = (ms) => runMeasurement(shell, ms);
  }
  return { host, everyMs, timeoutMs, measure, once: flags.once === true };
}

function duration(text: string, flag: string): number {
  try {
    return parseDuration(text, flag);
  } catch (e) {
    throw new UsageError((e as Error).message, { cause: e });
  }
}

/** Runs `shell` with a time limit and reads the load it prints. */
export function runMeasurement(shell: string, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(
      "/bin/sh",
      ["-c", shell],
      { timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: MAX_OUTPUT_BYTES, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (error !== null) {
          const why = error.killed
            ? `took longer than ${timeoutMs} ms (--timeout)`
            : `failed (${error.code ?? error.signal ?? error.message})`;
          const said = stderr.trim() === "" ? "" : `: ${oneLine(stderr).slice(0, 200)}`;
          reject(new Error(`--command ${why}${said}`));
          return;
        }
        const text = stdout.trim();
        const load = Number(text);
        if (text === "" || !isHostLoad(load)) {
          reject(new Error(`--command printed ${JSON.stringify(text.slice(0, 80))}, not one number >= 0`));
          return;
        }
        resolve(load);
      },
    );
  });
}

/** Publishes until a signal (or once); resolves with the exit code. */
async function hostLoad(flags: HostLoadFlags): Promise<number> {
  const plan = planOf(flags);
  const subject = new Subjects(flags.prefix).load(plan.host);
  const target = natsTarget(flags, [LOCAL_NATS_URL]);
  // Running for days: ride out server restarts (publications in between are buffered, then the newest counts).
  const nc = await connectTo(target, { name: "leasehold-host-load", maxReconnectAttempts: plan.once ? 0 : -1 });
  try {
    if (plan.once) return await publishOnce(nc, subject, plan);
    return await publishEvery(nc, subject, plan);
  } finally {
    await withDeadline(nc.drain(), FLUSH_MS, "drain the NATS connection").catch(() => nc.close());
  }
}

async function publishOnce(nc: NatsConnection, subject: string, plan: HostLoadPlan): Promise<number> {
  let load: number;
  try {
    load = await plan.measure(plan.timeoutMs);
  } catch (e) {
    throw new CliError((e as Error).message, EXIT.refused, { cause: e });
  }
  nc.publish(subject, hostLoadBody(load));
  await withDeadline(nc.flush(), FLUSH_MS, `publish to ${subject}`);
  console.error(`leasehold host-load: published load ${load} for ${plan.host} on ${subject}`);
  return EXIT.ok;
}

async function publishEvery(nc: NatsConnection, subject: string, plan: HostLoadPlan): Promise<number> {
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  let stopping = false;
  const onSignal = () => {
    stopping = true;
    stop();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let closedBy: Error | undefined;
  void nc.closed().then((err) => {
    closedBy = err ?? new Error("closed by the server");
    onSignal();
  });
  console.error(`leasehold host-load: publishing the load of ${plan.host} on ${subject} every ${plan.everyMs} ms; Ctrl-C stops`);
  watchConnection(nc, {
    lost: (server) =>
      console.error(
        `leasehold host-load: NATS connection to ${server} lost; reconnecting (the service takes this host's load for unknown once its last one is older than --load-stale-ms)`,
      ),
    back: (server, awayMs) => console.error(`leasehold host-load: NATS connection to ${server} back after ${awayMs} ms; publishing again`),
  });
  let lastProblem = "";
  try {
    while (!stopping) {
      const started = performance.now();
      try {
        const load = await Promise.race([plan.measure(plan.timeoutMs), stopped.then(() => undefined)]);
        if (load === undefined) break;
        nc.publish(subject, hostLoadBody(load));
        if (lastProblem !== "") console.error(`leasehold host-load: publishing again (load ${load})`);
        lastProblem = "";
      } catch (e) {
        // One line per failed period; the service's copy goes stale meanwhile.
        lastProblem = oneLine((e as Error).message);
        console.error(`leasehold host-load: ${lastProblem}; nothing published this period`);
      }
      const waitMs = Math.max(0, plan.everyMs - (performance.now() - started));
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs))), stopped]);
      clearTimeout(timer);
    }
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
  if (closedBy !== undefined) throw new CliError(`the NATS connection closed: ${closedBy.message}`, EXIT.usage, { cause: closedBy });
  return EXIT.ok;
}
