/**
 * Assembles one service instance on a NATS connection: the event log, the
 * actor host with every kind's logic, the endpoints in the `leasehold` queue
 * group, and the housekeeping sweep. Several instances may share a prefix.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import type { Logger } from "pino";
import { randomBytes } from "node:crypto";
import { ActorHost, KvSnapshotStore, systemClock, type Clock } from "./actors/index.ts";
import { lockModule } from "./actors/lock/module.ts";
import { routeModule } from "./actors/route/module.ts";
import { proxyModule } from "./actors/proxy/module.ts";
import { MicroService, toResponse } from "./api/index.ts";
import { CommandConsumer } from "./api/command-consumer.ts";
import type { KindContext, KindModule } from "./kind-module.ts";
import { JetStreamEventLog, SERVICE_NAME, Subjects, type EventLog } from "./events/index.ts";
import type { ServiceConfig } from "./config.ts";
import { VERSION } from "./version.ts";

/** What a running instance exposes to its owner (the CLI, tests). */
export interface RunningService {
  readonly host: ActorHost;
  readonly log: EventLog;
  readonly subjects: Subjects;
  readonly micro: MicroService;
  readonly commands: CommandConsumer;
  /** Stops taking requests, finishes the turns in flight, and stops. */
  stop(): Promise<void>;
}

/** Options of {@link startService}. */
export interface StartServiceOptions {
  readonly nc: NatsConnection;
  readonly config: ServiceConfig;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Id generator for leases (default: 128 random bits from the CSPRNG, base64url). */
  readonly newId?: () => string;
}

/** 128 bits from the CSPRNG: lease ids must be unguessable. */
const secureId = (): string => randomBytes(16).toString("base64url");

/** The kinds every instance serves. */
const KIND_MODULES: readonly ((ctx: KindContext) => KindModule)[] = [lockModule, proxyModule, routeModule];

/** Actors idle this long are dropped from memory (their state is in the stream). */
const PASSIVATE_AFTER_MS = 10 * 60_000;

/** Starts one service instance. */
export async function startService(options: StartServiceOptions): Promise<RunningService> {
  const { nc, config, logger } = options;
  const clock = options.clock ?? systemClock;
  const subjects = new Subjects(config.prefix);
  const log = await JetStreamEventLog.open(nc, {
    stream: subjects.eventStream,
    subjects: subjects.allEvents,
    dedupWindowMs: config.dedupWindowMs,
    replicas: config.replicas,
  });
  const snapshots = await KvSnapshotStore.open(nc, subjects.snapshotBucket, config.replicas);
  const host = new ActorHost({ log, subjects, clock, logger, dedupWindowMs: config.dedupWindowMs, snapshots });
  const ctx: KindContext = { host, log, subjects, config, clock, logger, newId: options.newId ?? secureId };
  const modules = KIND_MODULES.map((make) => make(ctx));
  for (const module of modules) await module.start?.();

  const micro = new MicroService(nc, {
    name: SERVICE_NAME,
    version: VERSION,
    description: "leasehold: proxy leases, route placement and fenced locks on JetStream",
    queue: SERVICE_NAME,
    metadata: { prefix: config.prefix },
  });
  const endpoints = modules.flatMap((m) => m.endpoints);
  for (const endpoint of endpoints) {
    micro.addEndpoint(`${endpoint.kind}_${endpoint.op}`, subjects.command(endpoint.kind, endpoint.op), async (data) => {
      const result = await endpoint.run(data);
      if (!result.ok) {
        logger.debug({ kind: endpoint.kind, op: endpoint.op, code: result.rejection.code, message: result.rejection.message }, "command refused");
      }
      return toResponse(result);
    });
  }

  const commands = await CommandConsumer.start({
    nc,
    subjects,
    endpoints,
    logger,
    dedupWindowMs: config.dedupWindowMs,
    replicas: config.replicas,
    ackWaitMs: config.commandAckWaitMs,
    maxInFlight: config.commandConcurrency,
  });

  let sweeping = false;
  const sweep = setInterval(() => {
    if (sweeping) return; // a slow sweep is never overlapped by the next one
    sweeping = true;
    void (async () => {
      for (const module of modules) {
        try {
          await module.sweep?.();
        } catch (err) {
          logger.warn({ err }, "sweep failed; it runs again next interval");
        }
      }
      await reportBacklog(commands, logger);
      const stopped = host.passivate(PASSIVATE_AFTER_MS);
      if (stopped > 0) logger.debug({ stopped, active: host.activeActors }, "passivated idle actors");
    })().finally(() => (sweeping = false));
  }, config.sweepIntervalMs);
  sweep.unref();

  return {
    host,
    log,
    subjects,
    micro,
    commands,
    async stop() {
      clearInterval(sweep);
      await Promise.all([micro.stop(), commands.stop()]);
      await host.drain();
      for (const module of modules) await module.stop?.();
    },
  };
}

/** Logs the durable command backlog so an operator sees one build up (info when non-empty). */
async function reportBacklog(commands: CommandConsumer, logger: Logger): Promise<void> {
  try {
    const lag = await commands.lag();
    const level = lag.pending + lag.unacknowledged > 0 ? "info" : "debug";
    logger[level]({ ...lag }, "durable command backlog");
  } catch (err) {
    logger.warn({ err }, "could not read the durable command consumer");
  }
}
