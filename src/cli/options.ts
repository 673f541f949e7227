/**
 * Flags shared by every `leasehold` command, each also read from
 * `LEASEHOLD_<FLAG>` in the environment, and the one way a command reports a
 * failure (one line, exit codes of {@link EXIT}).
 */
import { InvalidArgumentError, Option, type Command } from "commander";
import { DEFAULTS, PRINCIPAL_SOURCES } from "../config.ts";
import { ROUTE_CHOOSER_NAMES } from "../contract/route-choosers.ts";
import { attachTool, toolSubjects, type ToolConnection } from "../tools/connect.ts";
import { EXIT, reportFailure } from "./cli-errors.ts";
import { parseListen } from "../http/server.ts";
import { addNatsOptions, connectTo, LOCAL_NATS_URL, natsTarget, type ConnectionFlags } from "./connection-options.ts";

/** Flags every command has. */
export interface CommonFlags extends ConnectionFlags {
  readonly prefix?: string | undefined;
  readonly logLevel?: string | undefined;
}

/** Adds the NATS and credential flags (`withoutNats`: what the command does without `--nats`), `--prefix` and `--log-level`. */
export function addConnectionOptions(command: Command, withoutNats?: string): Command {
  addNatsOptions(command, withoutNats);
  return command
    .addOption(
      new Option("--prefix <prefix>", "subject prefix: commands <prefix>.v1.*, events <prefix>.events.*")
        .env("LEASEHOLD_PREFIX")
        .default(DEFAULTS.prefix),
    )
    .addOption(
      new Option("--log-level <level>", "how much to log; debug also shows the cause of a failure")
        .env("LEASEHOLD_LOG_LEVEL")
        .default("info")
        .choices(["fatal", "error", "warn", "info", "debug", "trace", "silent"]),
    );
}

/** A commander argument parser for a whole number from `min` to `max`: anything else is a usage error (exit 2). */
export function wholeNumber(min: number, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
  return (value: string) => {
    const n = Number(value);
    if (value.trim() === "" || !Number.isSafeInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`expected a whole number ${range}`);
    return n;
  };
}

/** A commander argument parser for `<host>:<port>` or `off` (`--http`). */
export function listenOrOff(value: string): string {
  if (value === "off") return value;
  try {
    parseListen(value);
  } catch {
    throw new InvalidArgumentError("expected <host>:<port> (e.g. 127.0.0.1:7420) or off");
  }
  return value;
}

/** A commander argument parser for a comma-separated list of host names (`--http-allowed-hosts`): DNS names only. */
export function hostNames(value: string): string[] {
  const names = value
    .split(",")
    .map((n) => n.trim())
    .filter((n) => n !== "");
  const bad = names.find(
    (n) => !/^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(n),
  );
  if (bad !== undefined)
    throw new InvalidArgumentError(`expected host names separated by commas (e.g. leasehold.internal), got ${JSON.stringify(bad)}`);
  return names;
}

/** Adds the service's tuning flags. */
export function addServiceOptions(command: Command): Command {
  const ms = (flag: string, env: string, description: string, value: number) =>
    command.addOption(new Option(`--${flag} <ms>`, description).env(env).default(String(value)));
  ms(
    "cooldown-ms",
    "LEASEHOLD_COOLDOWN_MS",
    "how long a proxy stays cooled down for a target after a rate_limited or banned report; also how long an expired proxy lease still answers report",
    DEFAULTS.cooldownMs,
  );
  ms("route-idle-ms", "LEASEHOLD_ROUTE_IDLE_MS", "a route lease unused for longer is removed by the sweep", DEFAULTS.routeIdleMs);
  ms("lock-ttl-ms", "LEASEHOLD_LOCK_TTL_MS", "lock TTL when a request names none", DEFAULTS.lockTtlMs);
  ms(
    "max-ttl-ms",
    "LEASEHOLD_MAX_TTL_MS",
    "ceiling on any lock TTL (larger requests get TTL_EXCEEDS_MAX) and on how far ahead a recorded lease may end (beyond it: CORRUPT)",
    DEFAULTS.maxTtlMs,
  );
  ms(
    "max-wait-ms",
    "LEASEHOLD_MAX_WAIT_MS",
    "locks: the longest a blocking acquire may wait in the lock's queue (a larger waitMs is BAD_REQUEST)",
    DEFAULTS.maxWaitMs,
  );
  ms(
    "claim-window-ms",
    "LEASEHOLD_CLAIM_WINDOW_MS",
    "locks: how long the first waiter has to take a freed lock before it loses its place (how long a waiter whose instance died holds the lock up)",
    DEFAULTS.claimWindowMs,
  );
  command.addOption(
    new Option("--max-waiters <n>", "locks: live waiters one lock's queue holds at most (a waiting acquire past them is TOO_MANY_WAITERS)")
      .env("LEASEHOLD_MAX_WAITERS")
      .default(String(DEFAULTS.maxWaiters)),
  );
  command.addOption(
    new Option(
      "--max-waiting-acquires <n>",
      "locks: waiting acquires one instance holds at once, across all locks (one more is TOO_MANY_WAITERS)",
    )
      .env("LEASEHOLD_MAX_WAITING_ACQUIRES")
      .default(String(DEFAULTS.maxWaitingAcquires)),
  );
  command.addOption(
    new Option(
      "--max-unknown-loads <n>",
      "host loads: how many hosts without a host record have their load kept (the oldest dropped first)",
    )
      .env("LEASEHOLD_MAX_UNKNOWN_LOADS")
      .default(String(DEFAULTS.maxUnknownLoads)),
  );
  command.addOption(
    new Option(
      "--max-active-requests <n>",
      "requests served at once; past them a request waits while other clients' requests take turns with its client's",
    )
      .env("LEASEHOLD_MAX_ACTIVE_REQUESTS")
      .default(String(DEFAULTS.maxActiveRequests)),
  );
  command.addOption(
    new Option(
      "--max-queued-requests <n>",
      "requests that may wait for their turn, all clients together, a tenth of them per client (one more is UNAVAILABLE)",
    )
      .env("LEASEHOLD_MAX_QUEUED_REQUESTS")
      .default(String(DEFAULTS.maxQueuedRequests)),
  );
  ms(
    "sweep-interval-ms",
    "LEASEHOLD_SWEEP_INTERVAL_MS",
    "how often housekeeping runs (idle route expiry, retention, remembered replies)",
    DEFAULTS.sweepIntervalMs,
  );
  ms(
    "dedup-window-ms",
    "LEASEHOLD_DEDUP_WINDOW_MS",
    "how long a repeated requestId is answered from the first reply (also the stream's duplicate window when the service creates it)",
    DEFAULTS.dedupWindowMs,
  );
  command.addOption(
    new Option(
      "--cooldown-backoff <factor>",
      "proxies: each further cooldown of a (proxy, target) streak lasts this factor times the one before (1: every cooldown lasts --cooldown-ms)",
    )
      .env("LEASEHOLD_COOLDOWN_BACKOFF")
      .default(String(DEFAULTS.cooldownBackoff)),
  );
  ms("max-cooldown-ms", "LEASEHOLD_MAX_COOLDOWN_MS", "proxies: the longest a cooldown may last with backoff", DEFAULTS.maxCooldownMs);
  ms(
    "request-timeout-ms",
    "LEASEHOLD_REQUEST_TIMEOUT_MS",
    "how long a command may take from arrival to answer; past it the service answers UNAVAILABLE (every wait on NATS is bounded by it)",
    DEFAULTS.requestTimeoutMs,
  );
  ms(
    "command-ack-wait-ms",
    "LEASEHOLD_COMMAND_ACK_WAIT_MS",
    "durable commands: how long one may stay unacknowledged (its instance died or hangs) before JetStream redelivers it; keep it well above a slow turn",
    DEFAULTS.commandAckWaitMs,
  );
  command.addOption(
    new Option("--command-concurrency <n>", "durable commands one instance works on at once")
      .env("LEASEHOLD_COMMAND_CONCURRENCY")
      .default(String(DEFAULTS.commandConcurrency)),
  );
  command.addOption(
    new Option(
      "--route-chooser <name>",
      "which host a new route lease goes to: least-loaded (fewest active leases, then name), rendezvous (highest hash of key and host, so routers agree without coordination), " +
        "least-load (lowest load the hosts publish on <prefix>.loads.<host>, then fewest leases) or bounded-hash (a route's conversations on few hosts, for their prompt caches, no host above --hash-balance-factor times the mean)",
    )
      .env("LEASEHOLD_ROUTE_CHOOSER")
      .choices(ROUTE_CHOOSER_NAMES)
      .default(DEFAULTS.routeChooser),
  );
  command.addOption(
    new Option(
      "--hash-balance-factor <c>",
      "bounded-hash: a host takes a new lease only while its active leases stay within ceil(c * (A + 1) / n) (A: the n candidates' leases); a number > 1, lower spreads more",
    )
      .env("LEASEHOLD_HASH_BALANCE_FACTOR")
      .default(String(DEFAULTS.hashBalanceFactor)),
  );
  ms(
    "load-stale-ms",
    "LEASEHOLD_LOAD_STALE_MS",
    "a host load published longer ago than this is unknown (least-load places such hosts after every known one; host.list shows null)",
    DEFAULTS.loadStaleMs,
  );
  command.addOption(
    new Option("--replicas <n>", "replicas of every stream and bucket the service creates (3 on a three-node cluster)")
      .env("LEASEHOLD_REPLICAS")
      .default("1"),
  );
  command.addOption(
    new Option(
      "--principals <source>",
      "who sent a request: off (every principal unknown, as in 1.2) or nats-request-info (the Nats-Request-Info header the server adds to requests that cross a service import; the layout `leasehold nats-config --layout accounts` writes)",
    )
      .env("LEASEHOLD_PRINCIPALS")
      .choices(PRINCIPAL_SOURCES)
      .default(DEFAULTS.principals),
  );
  command.addOption(
    new Option(
      "--operators <list>",
      "comma-separated principals (<account>/<user>, <account>, or <account>/* for every user of it) that alone may call operator ops (lock.reset, host.set, proxy.register, route.pin, ...) and may act on any holder's lease; unset: anyone may call operator ops",
    ).env("LEASEHOLD_OPERATORS"),
  );
  command.addOption(
    new Option("--require-principal", "refuse every request whose principal is unknown with UNAUTHENTICATED (401)").env(
      "LEASEHOLD_REQUIRE_PRINCIPAL",
    ),
  );
  // Only for the tests that show the NATS server's own refusal of replies into reserved namespaces.
  command.addOption(new Option("--unsafe-no-reply-check").env("LEASEHOLD_UNSAFE_NO_REPLY_CHECK").hideHelp());
  return command;
}

/**
 * Runs a command's body and ends the process the documented way: its result
 * is the exit code; a failure is one line on stderr (cause with
 * `--log-level debug`) and its own exit code (2 unless it says otherwise).
 */
export async function runReported(command: string, flags: Pick<CommonFlags, "logLevel">, body: () => Promise<number>): Promise<void> {
  try {
    process.exitCode = await body();
  } catch (e) {
    process.exitCode = reportFailure(command, e, flags.logLevel === "debug" || flags.logLevel === "trace");
  }
}

/**
 * Makes `command` an operator tool that reads the stream: adds the connection
 * flags and their help, and when run reads the flags with `parse` (a usage
 * error exits 2 before connecting), connects, opens the stream and runs
 * `body`, whose result is the exit code. Messages go to stderr as
 * `leasehold <command>: <message>`.
 */
export function addToolAction<F extends CommonFlags, P>(
  command: Command,
  parse: (flags: F) => P,
  body: (connection: ToolConnection, parsed: P, flags: F) => Promise<number>,
): void {
  const name = command.name();
  addConnectionOptions(command);
  command.addHelpText("after", CONNECTION_HELP);
  command.action((flags: F) =>
    runReported(name, flags, async () => {
      const parsed = parse(flags);
      const subjects = toolSubjects(flags.prefix);
      const target = natsTarget(flags, [LOCAL_NATS_URL]);
      const nc = await connectTo(target, { name: `leasehold-${name}`, maxReconnectAttempts: 0 });
      try {
        return await body(await attachTool(nc, subjects, target.label), parsed, flags);
      } finally {
        await nc.close().catch(() => undefined);
      }
    }),
  );
}

/** The "Examples:" section of a command's help: one command line each. */
export function examplesHelp(...lines: string[]): string {
  return `\nExamples:\n${lines.map((line) => `  ${line}`).join("\n")}`;
}

/** Help text every command that connects adds: where it connects without --nats, and the exit codes. */
export const CONNECTION_HELP = `
Without --nats (or LEASEHOLD_NATS, or NATS_URL) it connects to ${LOCAL_NATS_URL}, where the nats-server of \`leasehold serve\` listens.
Exit codes: ${EXIT.ok} ok, ${EXIT.refused} violations found or command refused, ${EXIT.usage} usage or connection error.`;
