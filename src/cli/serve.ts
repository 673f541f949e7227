/**
 * `leasehold serve`: connects to NATS (or starts the project's nats-server),
 * starts one service instance, logs its effective configuration, and on
 * SIGTERM/SIGINT stops taking requests, finishes the turns in flight and exits 0.
 */
import { connect } from "@nats-io/transport-node";
import { pino } from "pino";
import { resolveConfig, type ServiceConfig } from "../config.ts";
import { startService } from "../service.ts";
import { VERSION } from "../version.ts";
import { startLocalNats, type LocalNats } from "./local-nats.ts";
import { DEFAULT_LOCAL_HTTP, ServiceMetrics, startHttp, type RunningHttp } from "../http/index.ts";

/** Options as commander hands them over (strings from flags or environment). */
export interface ServeFlags {
  nats?: string;
  prefix?: string;
  logLevel: string;
  cooldownMs?: string;
  routeIdleMs?: string;
  lockTtlMs?: string;
  maxTtlMs?: string;
  sweepIntervalMs?: string;
  dedupWindowMs?: string;
  replicas?: string;
  commandAckWaitMs?: string;
  commandConcurrency?: string;
  /** `host:port` of /metrics, /healthz, /readyz and the dashboard; `off` for none (default: off, 127.0.0.1:7420 with the local nats-server). */
  http?: string;
}

/** Runs the service until a signal stops it. */
export async function serve(flags: ServeFlags): Promise<void> {
  const logger = pino({ level: flags.logLevel, base: { service: "leasehold" } });
  let config: ServiceConfig;
  try {
    config = resolveConfig({ ...flags, nats: flags.nats ?? process.env.NATS_URL });
  } catch (e) {
    logger.fatal((e as Error).message);
    process.exitCode = 2;
    return;
  }
  let local: LocalNats | undefined;
  let url = config.nats;
  if (url === undefined) {
    local = await startLocalNats(logger);
    url = local.url;
  }
  // noAsyncTraces: nats.js would otherwise capture a stack trace for every
  // request it sends (each JetStream append is one), a sixth of a turn's CPU.
  const nc = await connect({
    servers: url,
    name: "leasehold-serve",
    maxReconnectAttempts: -1,
    noAsyncTraces: true,
    // The local server's nats.conf gives only the service user the right to write the event stream.
    ...(local === undefined ? {} : { user: local.user, pass: local.password }),
  });
  // The runtime reports commands and appends here; /metrics exposes it.
  const metrics = new ServiceMetrics();
  const service = await startService({ nc, config, logger });
  const httpListen = flags.http ?? (local === undefined ? undefined : DEFAULT_LOCAL_HTTP);
  let http: RunningHttp | undefined;
  if (httpListen !== undefined && httpListen !== "off") {
    http = await startHttp({ listen: httpListen, service: { nc, log: service.log, subjects: service.subjects, host: service.host }, metrics, logger });
  }
  logger.info(
    { version: VERSION, instance: service.micro.id, natsUrl: url, localNats: local !== undefined, dashboard: http?.url, stream: service.subjects.eventStream, config },
    "leasehold serving",
  );

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, inFlight: service.micro.busy }, "stopping: no new requests, finishing turns in flight");
    try {
      await http?.stop();
      await service.stop();
      await nc.drain();
      await local?.stop();
      logger.info("stopped");
      process.exit(0);
    } catch (e) {
      logger.error({ err: e }, "unclean stop");
      process.exit(1);
    }
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  void nc.closed().then((err) => {
    if (!stopping) {
      logger.fatal({ err }, "NATS connection closed");
      process.exit(1);
    }
  });
}
