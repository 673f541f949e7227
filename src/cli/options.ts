/**
 * Connection and service flags shared by every `leasehold` command, each also
 * read from `LEASEHOLD_<FLAG>` in the environment (PROTOCOL.md).
 */
import { Option, type Command } from "commander";
import { DEFAULTS } from "../config.ts";
import { CONNECTION_HELP, runTool, ToolUsageError, type ConnectionFlags, type ToolConnection } from "../tools/index.ts";

/** Adds `--nats` and `--prefix` (every command connects as `serve` does). */
export function addConnectionOptions(command: Command): Command {
  return command
    .addOption(
      new Option("--nats <url>", "NATS server URL; without it, serve starts its own nats-server from nats.conf (also NATS_URL)").env(
        "LEASEHOLD_NATS",
      ),
    )
    .addOption(
      new Option("--prefix <prefix>", "subject prefix: commands <prefix>.v1.*, events <prefix>.events.*").env("LEASEHOLD_PREFIX").default(DEFAULTS.prefix),
    )
    .addOption(new Option("--log-level <level>", "pino log level").env("LEASEHOLD_LOG_LEVEL").default("info").choices(["fatal", "error", "warn", "info", "debug", "trace", "silent"]));
}

/** Adds the service's tuning flags. */
export function addServiceOptions(command: Command): Command {
  const ms = (flag: string, env: string, description: string, value: number) =>
    command.addOption(new Option(`--${flag} <ms>`, description).env(env).default(String(value)));
  ms("cooldown-ms", "LEASEHOLD_COOLDOWN_MS", "how long a proxy stays cooled down for a target after a rate_limited or banned report; also how long an expired proxy lease still answers report", DEFAULTS.cooldownMs);
  ms("route-idle-ms", "LEASEHOLD_ROUTE_IDLE_MS", "a route lease unused for longer is removed by the sweep", DEFAULTS.routeIdleMs);
  ms("lock-ttl-ms", "LEASEHOLD_LOCK_TTL_MS", "lock TTL when a request names none", DEFAULTS.lockTtlMs);
  ms("max-ttl-ms", "LEASEHOLD_MAX_TTL_MS", "ceiling on any lock TTL (larger requests get TTL_EXCEEDS_MAX) and on how far ahead a recorded lease may end (beyond it: CORRUPT)", DEFAULTS.maxTtlMs);
  ms("sweep-interval-ms", "LEASEHOLD_SWEEP_INTERVAL_MS", "how often housekeeping runs (idle route expiry, retention, passivation)", DEFAULTS.sweepIntervalMs);
  ms("dedup-window-ms", "LEASEHOLD_DEDUP_WINDOW_MS", "how long a repeated requestId is answered from the first reply (also the stream's duplicate window when the service creates it)", DEFAULTS.dedupWindowMs);
  ms("command-ack-wait-ms", "LEASEHOLD_COMMAND_ACK_WAIT_MS", "durable commands: how long one may stay unacknowledged (its instance died or hangs) before JetStream redelivers it; keep it well above a slow turn (an append waits up to 5 s and is retried once)", DEFAULTS.commandAckWaitMs);
  command.addOption(
    new Option("--command-concurrency <n>", "durable commands one instance works on at once").env("LEASEHOLD_COMMAND_CONCURRENCY").default(String(DEFAULTS.commandConcurrency)),
  );
  command.addOption(
    new Option("--route-chooser <name>", "which host a new route lease goes to: least-loaded (fewest active leases, then name) or rendezvous (highest hash of key and host, so routers agree without coordination)")
      .env("LEASEHOLD_ROUTE_CHOOSER")
      .choices(["least-loaded", "rendezvous"])
      .default(DEFAULTS.routeChooser),
  );
  command.addOption(new Option("--replicas <n>", "replicas of the streams the service creates (3 on a cluster)").env("LEASEHOLD_REPLICAS").default("1"));
  return command;
}

/**
 * Makes `command` an operator tool that reads the stream: adds the connection
 * flags and their help, and when run reads the flags with `parse` (a
 * ToolUsageError is reported and exits 2 before connecting), then opens the
 * stream and runs `body`, whose result is the exit code. Messages go to
 * stderr as `leasehold <command>: <message>`.
 */
export function addToolAction<F extends ConnectionFlags, P>(
  command: Command,
  parse: (flags: F) => P,
  body: (connection: ToolConnection, parsed: P, flags: F) => Promise<number>,
): void {
  const name = command.name();
  addConnectionOptions(command);
  command.addHelpText("after", CONNECTION_HELP);
  command.action(async (flags: F) => {
    const report = (m: string) => console.error(`leasehold ${name}: ${m}`);
    let parsed: P;
    try {
      parsed = parse(flags);
    } catch (e) {
      if (!(e instanceof ToolUsageError)) throw e;
      report(e.message);
      process.exitCode = 2;
      return;
    }
    process.exitCode = await runTool(flags, `leasehold-${name}`, (connection) => body(connection, parsed, flags), report);
  });
}
