/**
 * `leasehold serve`: connects to NATS (or starts its own nats-server), starts
 * one service instance and runs until SIGTERM/SIGINT (or, started through
 * npm, until npm exits); then it stops taking requests, finishes the turns in
 * flight, drains its connection, stops its nats-server and exits 0, all
 * within 10 s.
 */
import { createServer } from "node:net";
import { relative } from "node:path";
import type { NatsConnection } from "@nats-io/nats-core";
import { ConfigError, DEFAULTS, resolveConfig, type ServiceConfig } from "../config.ts";
import { watchConnection } from "./connection-watch.ts";
import { explainStartFailure, type StartContext } from "./start-failures.ts";
import { inboxPrefixOf } from "../security/nats-permissions.ts";
import { startService } from "../service/start-service.ts";
import { CLOCK_OFFSET_VARIABLE, clockOffsetMs, offsetClock } from "./clock-offset.ts";
import { VERSION } from "../version.ts";
import { CliError, EXIT, reportFailure, UsageError } from "./cli-errors.ts";
import {
  appendTarget,
  connectTo,
  LOCAL_NATS_URL,
  natsServers,
  natsTarget,
  type AppendConnectionFlags,
  type NatsTarget,
} from "./connection-options.ts";
import { openBusWarning } from "./open-bus.ts";
import { startLocalNats, type LocalNats } from "./local-nats.ts";
import { cliLogger, effectiveFormat, type LogFormat } from "./logging.ts";
import type { CommonFlags } from "./options.ts";
import { Shutdown } from "./shutdown.ts";
import { applyHeapGrowth } from "./heap-growth.ts";
import { CommandCount, startIdleCollect } from "./idle-collect.ts";
import { DEFAULT_LOCAL_HTTP, httpParts, parseListen, ServiceMetrics, startHttp, type RunningHttp } from "../http/index.ts";

/** Options as commander hands them over (strings from flags or environment). */
export interface ServeFlags extends CommonFlags, AppendConnectionFlags {
  logLevel: string;
  logFormat: LogFormat;
  dataDir: string;
  natsPort: number;
  heapGrowthPercent: number;
  idleCollectMs: number;
  cooldownMs?: string;
  routeIdleMs?: string;
  lockTtlMs?: string;
  maxTtlMs?: string;
  maxWaitMs?: string;
  claimWindowMs?: string;
  maxWaiters?: string;
  maxWaitingAcquires?: string;
  maxUnknownLoads?: string;
  maxActiveRequests?: string;
  maxQueuedRequests?: string;
  sweepIntervalMs?: string;
  dedupWindowMs?: string;
  replicas?: string;
  commandAckWaitMs?: string;
  commandConcurrency?: string;
  requestTimeoutMs?: string;
  cooldownBackoff?: string;
  maxCooldownMs?: string;
  routeChooser?: string;
  hashBalanceFactor?: string;
  loadStaleMs?: string;
  principals?: string;
  operators?: string;
  requirePrincipal?: boolean;
  /** Hidden: turns off the service's own reply-subject check (tests of the server's refusal only). */
  unsafeNoReplyCheck?: boolean;
  /** `--http <host:port>` (health, metrics, dashboard). */
  http?: string;
  httpAllowedHosts?: string[];
  httpStreamsPerPeer?: number;
}

/** How long each part of the stop may take; the whole is bounded by the shutdown's 10 s. */
const STOP_SERVICE_MS = 6000;
const DRAIN_MS = 2000;
/** How far apart the two connections' losses may be and still be one outage of NATS. */
const SIDE_OUTAGE_SLACK_MS = 2000;
const STOP_NATS_SERVER_MS = 1500;

/**
 * Runs the service until a signal stops it. `logLevelGiven` tells whether
 * --log-level was set (on a terminal the default shows warnings only).
 */
export async function serve(flags: ServeFlags, logLevelGiven: boolean): Promise<void> {
  const format = effectiveFormat(flags.logFormat, process.stderr.isTTY);
  const logger = cliLogger(format, format === "text" && !logLevelGiven ? "warn" : flags.logLevel);
  const debug = flags.logLevel === "debug" || flags.logLevel === "trace";
  // Before anything is spawned: a signal at any point of the start-up stops what has started so far.
  const shutdown = new Shutdown({ logger });
  shutdown.installSignalHandlers();
  if (process.env.npm_command !== undefined) shutdown.followParent();
  try {
    const { config, target, append } = readSettings(flags);
    let local: LocalNats | undefined;
    let connectTarget = target;
    let appendConnectTarget = append;
    const httpListen = flags.http ?? (target === undefined ? DEFAULT_LOCAL_HTTP : undefined);
    // Before anything starts: a taken port would otherwise be found only after the nats-server and the whole start.
    if (httpListen !== undefined && httpListen !== "off") await refuseBusyHttp(httpListen);
    if (target === undefined) {
      local = await startLocalNats({
        dataDir: flags.dataDir,
        port: flags.natsPort,
        logger,
        note: (line) => (format === "text" ? console.error(`leasehold: ${line}`) : logger.info(line)),
        onSpawn: (stop) => shutdown.add("local nats-server", (ms) => stop(ms), STOP_NATS_SERVER_MS),
      });
      // Nothing else would restart it: without it serve would wait for NATS forever, answering nothing.
      const { pid, exited } = local;
      void exited.then((code) => {
        if (shutdown.stopping) return;
        reportFailure(
          "serve",
          new CliError(
            `its nats-server (pid ${pid}) exited (code ${code}), so serve stops; the data in ${displayPath(flags.dataDir)} is kept: start serve again`,
            EXIT.usage,
          ),
          debug,
        );
        void shutdown.begin("local nats-server exited", EXIT.usage);
      });
      // The shipped nats.conf has two service users: one answers (and may publish only to clients' inboxes), one appends.
      const as = (user: string, pass: string): NatsTarget => ({
        servers: [local!.url],
        label: local!.url,
        auth: { user, pass },
        hasCredentials: true,
        inboxPrefix: inboxPrefixOf(user),
      });
      connectTarget = as(local.user, local.password);
      appendConnectTarget = as(local.appendUser, local.appendPassword);
    }
    if (shutdown.stopping) return;
    const connectOptions = {
      maxReconnectAttempts: -1,
      // nats.js would otherwise capture a stack trace for every request it sends (each append is one), a sixth of a turn's CPU.
      noAsyncTraces: true,
    };
    const nc = await connectTo(connectTarget!, { name: "leasehold-serve", ...connectOptions });
    shutdown.add("NATS connection", (ms) => drain(nc, ms), DRAIN_MS);
    /** When the answering connection was last lost: the side connection's outage then is the same one, said once. */
    let answeringLostAt = -Infinity;
    watchConnection(nc, {
      lost: (server) => {
        answeringLostAt = performance.now();
        logger.warn({ server }, "NATS connection lost; reconnecting (meanwhile commands that need the stream answer UNAVAILABLE)");
      },
      back: (server, awayMs) => logger.warn({ server, awayMs }, "NATS connection back"),
    });
    if (shutdown.stopping) return;
    // Without a second user, the one connection answers and appends: the server then lets a reply go wherever its user may publish.
    const appendNc =
      appendConnectTarget === undefined ? nc : await connectTo(appendConnectTarget, { name: "leasehold-serve-append", ...connectOptions });
    // Its own share of the 10 s: the service has stopped appending by the time it drains.
    if (appendNc !== nc) shutdown.add("NATS appending connection", (ms) => drain(appendNc, ms), DRAIN_MS / 2);
    if (shutdown.stopping) return;
    // Host loads and discovery, which any client may flood, on a connection of their own (the answering user's): the
    // server drops a connection that falls too far behind, and that must not be the one every command arrives on.
    const sideNc = await connectTo(connectTarget!, { name: "leasehold-serve-loads", ...connectOptions });
    shutdown.add("NATS loads and discovery connection", (ms) => drain(sideNc, ms), DRAIN_MS / 2);
    watchConnection(sideNc, {
      lost: (server) => logger.debug({ server }, "NATS connection for host loads and discovery lost; reconnecting"),
      back: (server, awayMs) => {
        // Lost with the answering one, NATS itself went away (said already); alone, the server dropped it for falling behind.
        const alone = performance.now() - answeringLostAt > awayMs + SIDE_OUTAGE_SLACK_MS;
        if (!alone) logger.debug({ server, awayMs }, "NATS connection for host loads and discovery back");
        else
          logger.warn(
            { server, awayMs },
            "NATS connection for host loads and discovery was dropped and is back (a flood of host loads or discovery requests?); commands were served throughout",
          );
      },
    });
    if (shutdown.stopping) return;
    const open = openBusWarning(connectTarget!);
    if (open !== undefined) logger.warn({ servers: connectTarget!.servers }, open);
    if (!config.replyCheck) logger.warn("the reply-subject check is off (--unsafe-no-reply-check): a test setting, never for production");
    // The runtime reports every command and append to the metrics; /metrics exposes them.
    const metrics = new ServiceMetrics();
    // Counted on their way to the metrics: the idle collection runs only while no command comes.
    const commands = new CommandCount(metrics);
    const offsetMs = clockOffsetMs();
    if (offsetMs !== 0)
      logger.warn({ offsetMs }, `${CLOCK_OFFSET_VARIABLE} is set: this instance's clock is off by that much (a test hook)`);
    const starting = startService({
      nc,
      appendNc,
      sideNc,
      config,
      logger,
      clock: offsetClock(offsetMs),
      observer: commands,
      // A subscription the server refuses (e.g. a second instance joining the local server without the service's credentials) is fatal: say so in one line and stop.
      onFatal: (err) => {
        if (shutdown.stopping) return;
        const explained = explainStartFailure(err, startContext(flags));
        reportFailure(
          "serve",
          explained !== err
            ? explained
            : new UsageError(`${err.message} (does this user have the service's permissions? see docs/operations.md)`, { cause: err }),
          debug,
        );
        void shutdown.begin("subscription refused", EXIT.usage);
      },
    });
    // Registered before the start ends: the service answers once its endpoints are mounted, a moment before
    // startService resolves, and a SIGTERM in between must still stop it (its turns, its first snapshot) before
    // the connections drain.
    shutdown.add(
      "service",
      async (ms) => {
        const deadline = performance.now() + ms;
        const running = await starting.catch(() => undefined);
        if (running === undefined) return;
        const unanswered = await running.stop(Math.max(0, deadline - performance.now()));
        if (unanswered > 0) logger.warn({ unanswered }, "stopped with commands unanswered");
      },
      STOP_SERVICE_MS,
    );
    const service = await starting.catch((e: unknown) => {
      throw appendRefused(e, appendNc === nc);
    });
    // After the start's fold, which keeps V8's own policy: a first start over a long stream allocates the most.
    const growth = applyHeapGrowth(flags.heapGrowthPercent);
    if (growth.applied) logger.info({ v8Flag: growth.flag }, "heap growth held past each full collection");
    else logger.debug({ why: growth.why }, "heap growth left to V8");
    const stopIdleCollect = await startIdleCollect({ idleMs: flags.idleCollectMs, commands: () => commands.count, logger });
    if (stopIdleCollect !== undefined) shutdown.add("idle collection", () => Promise.resolve(stopIdleCollect()), 100);
    let http: RunningHttp | undefined;
    if (httpListen !== undefined && httpListen !== "off") {
      const allowedHosts = flags.httpAllowedHosts ?? [];
      const server = { allowedHosts, maxStreamsPerPeer: flags.httpStreamsPerPeer };
      http = await startHttp({ listen: httpListen, service: httpParts(nc, service), metrics, logger, server }).catch((e: unknown) => {
        if ((e as NodeJS.ErrnoException).code !== "EADDRINUSE") throw e;
        throw httpInUse(httpListen, e);
      });
      const running = http;
      shutdown.add("HTTP", () => running.stop(), 1000);
    }
    for (const [connection, which] of [
      [nc, "the NATS connection"],
      [appendNc, "the appending NATS connection"],
      [sideNc, "the NATS connection for host loads and discovery"],
    ] as const) {
      void connection.closed().then((err) => {
        if (shutdown.stopping) return;
        reportFailure("serve", new UsageError(`${which} closed: ${err?.message ?? "closed by the server"}`, { cause: err }), debug);
        void shutdown.begin("NATS connection closed", EXIT.usage);
      });
    }
    const where = connectTarget!.label;
    logger.info(
      {
        version: VERSION,
        pid: process.pid,
        instance: service.micro.id,
        natsUrl: where,
        localNats: local !== undefined,
        dataDir: local === undefined ? undefined : flags.dataDir,
        stream: service.subjects.eventStream,
        dashboard: http?.url,
        config,
      },
      "leasehold serving",
    );
    if (format === "text") console.error(readyLine(config, where, local !== undefined ? flags.dataDir : undefined, http?.url));
  } catch (e) {
    // A stop already under way (a signal, or a fatal refusal reported above) is why start-up broke off: nothing more to say.
    if (shutdown.stopping) return;
    const code = reportFailure("serve", explainStartFailure(e, startContext(flags)), debug);
    await shutdown.begin("start-up failed", code);
  }
}

/** `--http`'s address is taken: the one line that says so. */
function httpInUse(listen: string, cause: unknown): UsageError {
  return new UsageError(`--http: ${listen} is already in use; pick a free port with --http <host:port>, or turn it off with --http off`, {
    cause,
  });
}

/** Throws {@link httpInUse} when something already listens on `listen` (any other failure is left to the real bind). */
async function refuseBusyHttp(listen: string): Promise<void> {
  const { host, port } = parseListen(listen);
  const probe = createServer();
  const failure = await new Promise<NodeJS.ErrnoException | undefined>((done) => {
    probe.once("error", (e: NodeJS.ErrnoException) => done(e));
    probe.listen(port, host, () => probe.close(() => done(undefined)));
  });
  if (failure?.code === "EADDRINUSE") throw httpInUse(listen, failure);
}

/** Where and for what the start connected, for the words of a failure (flags already read, or unreadable). */
function startContext(flags: ServeFlags): StartContext {
  let servers: string[] | undefined;
  try {
    servers = natsServers(flags);
  } catch {
    servers = undefined;
  }
  return {
    where: servers?.join(",") ?? `nats://127.0.0.1:${flags.natsPort}`,
    prefix: flags.prefix ?? DEFAULTS.prefix,
    dataDir: flags.dataDir,
    localServer: servers === undefined,
  };
}

function readSettings(flags: ServeFlags): { config: ServiceConfig; target: NatsTarget | undefined; append: NatsTarget | undefined } {
  const servers = natsServers(flags);
  let config: ServiceConfig;
  try {
    const { unsafeNoReplyCheck, ...settings } = flags;
    config = resolveConfig({ ...settings, nats: servers?.join(","), replyCheck: unsafeNoReplyCheck !== true });
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(`${e.message}${setByEnvironment(e.message)}`, { cause: e });
    throw e;
  }
  if (servers === undefined) {
    const given = (
      [
        ...["creds", "user", "password", "token", "tlsCa", "tlsCert", "tlsKey", "inboxPrefix"],
        ...["appendCreds", "appendUser", "appendPassword", "appendInboxPrefix"],
      ] as const
    ).filter((k) => flags[k] !== undefined);
    if (given.length > 0) {
      throw new UsageError(
        `${given.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(", ")} need --nats: the local nats-server is joined as its own service user`,
      );
    }
    return { config, target: undefined, append: undefined };
  }
  return { config, target: natsTarget(flags, servers), append: appendTarget(flags, servers) };
}

/**
 * ` (set by LEASEHOLD_<FLAG>)` when the flag a setting's error names was not
 * typed but comes from the environment, where the user must look for it.
 */
function setByEnvironment(message: string): string {
  const flag = /^(--[a-z-]+):/.exec(message)?.[1];
  if (flag === undefined || process.argv.some((arg) => arg === flag || arg.startsWith(`${flag}=`))) return "";
  const variable = `LEASEHOLD_${flag.slice(2).replace(/-/g, "_").toUpperCase()}`;
  return process.env[variable] === undefined ? "" : ` (set by ${variable})`;
}

/** The one line a person at a terminal sees once the service answers. */
export function readyLine(config: ServiceConfig, where: string, dataDir: string | undefined, dashboard?: string): string {
  const local = dataDir === undefined ? "" : ` (its own nats-server, data in ${displayPath(dataDir)})`;
  const http = dashboard === undefined ? "" : `; dashboard ${dashboard}`;
  const prefix = config.prefix === "leasehold" ? "" : ` --prefix ${config.prefix}`;
  // The tools connect to LOCAL_NATS_URL by themselves: any other server must be named.
  const nats = where === LOCAL_NATS_URL ? "" : ` --nats ${where}`;
  return `leasehold ${VERSION} serving on ${where}${local}${http}; try: npx leasehold call${nats}${prefix} lock.acquire '{"name":"demo","owner":"me"}'; Ctrl-C stops`;
}

function displayPath(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === "" ? "." : rel.startsWith("..") || rel.startsWith("/") ? path : `./${rel}`;
}

/** A start refused for lack of JetStream rights on one connection: most likely the answering user alone was given, so say how to add the appending one. */
function appendRefused(error: unknown, oneConnection: boolean): unknown {
  const message = error instanceof Error ? error.message : String(error);
  if (!oneConnection || !/Permissions Violation/.test(message)) return error;
  return new UsageError(
    `this user may not append events or use the streams (${message}): give the appending user too, with --append-user/--append-password or --append-creds (leasehold nats-config's service is two users, the second one <prefix>-append)`,
    { cause: error },
  );
}

async function drain(nc: NatsConnection, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), ms)));
  const outcome = await Promise.race([nc.drain().then(() => "drained" as const), late]).catch(() => "failed" as const);
  clearTimeout(timer);
  if (outcome !== "drained") await nc.close().catch(() => undefined);
}
