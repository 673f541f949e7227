/**
 * Assembles one service instance on its NATS connections (one that answers,
 * one that appends; or one doing both): the event log, the
 * actor runtime with every kind's logic, the endpoints in the `leasehold` queue
 * group, and the housekeeping sweep. Several instances may share a prefix.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import type { Logger } from "pino";
import { ActorRuntime } from "../actors/actor-runtime.ts";
import { systemClock, type Clock } from "../actors/clock.ts";
import { lockModule } from "../lock/module.ts";
import { routeModule } from "../route/module.ts";
import { proxyModule } from "../proxy/module.ts";
import { MicroService } from "../transport/micro-service.ts";
import { endpointServer, mountEndpoints, type CommandObserver } from "../transport/endpoint.ts";
import { replyConfinement } from "../transport/micro-service.ts";
import { shedReport } from "../transport/micro-service.ts";
import { accountOf, principalSourceProblem } from "../transport/principal-source.ts";
import { Operators } from "../contract/operators.ts";
import { CommandConsumer } from "../transport/command-consumer.ts";
import type { KindContext, KindModule } from "../transport/kind-module.ts";
import { JetStreamEventLog } from "../events/jetstream-event-log.ts";
import { OP_TIMEOUT_MS, withDeadline } from "../events/deadline.ts";
import { type EventLog } from "../events/event-log.ts";
import { ACTOR_KINDS, SERVICE_NAME, Subjects, type ActorKind } from "../contract/subjects.ts";
import { ObjectProjectionSnapshotStore } from "../projections/snapshot-stores.ts";
import { HostLoads } from "../host/loads.ts";
import { followHostLoads } from "../host/load-feed.ts";
import { secureIds } from "./secure-ids.ts";
import type { ServiceConfig } from "../config.ts";
import { VERSION } from "../version.ts";

/** What a running instance exposes to its owner (the CLI, tests). */
export interface RunningService {
  readonly runtime: ActorRuntime;
  readonly log: EventLog;
  readonly subjects: Subjects;
  readonly micro: MicroService;
  readonly commands: CommandConsumer;
  /** What the runtime knows of itself, from memory (metrics and readiness read it; never waits on NATS). */
  readonly status: RuntimeStatus;
  /** The loads hosts publish on `<prefix>.loads.<host>`, as this instance received them (the dashboard reads them). */
  readonly hostLoads: HostLoads;
  /**
   * Stops taking requests, answers those in flight (UNAVAILABLE past their
   * deadline), saves the projections' snapshots and stops; resolves within
   * `timeoutMs` whatever NATS does, with how many commands were left unanswered.
   */
  stop(timeoutMs?: number): Promise<number>;
}

/** The runtime's own view of itself. */
export interface RuntimeStatus {
  /** Actors in memory by kind. */
  activeActors(): Record<ActorKind, number>;
  /** Events each kind's projection is behind the stream, as of its follower's last delivery. */
  readModelLag(): Record<ActorKind, number>;
  /** The highest stream sequence any projection has folded. */
  foldedSeq(): number;
  /** Every projection caught up at start (and the service not stopping). */
  ready(): boolean;
}

/** What a metrics registry takes from the service (prom-client's in src/http fits it). */
export interface ServiceObserver extends CommandObserver {
  appendFinished(seconds: number): void;
  appendConflict(): void;
  /** A request or durable command refused for its reply subject. */
  replyRefused?(path: "request" | "durable"): void;
  /** A request answered UNAVAILABLE without being carried out, for load (src/transport/fair-queue.ts). */
  requestShed?(reason: string): void;
}

/** Options of {@link startService}. */
export interface StartServiceOptions {
  /** The connection that answers: command endpoints, discovery, host loads, replies (also `Leasehold-Reply-To` answers). */
  readonly nc: NatsConnection;
  /**
   * The connection that appends: the event stream, the command stream and its
   * consumer, the snapshot bucket, durable command errors (default `nc`). Two
   * users let the server refuse a reply aimed at anything but a client's inbox.
   */
  readonly appendNc?: NatsConnection;
  /**
   * The connection for what any client may publish at any rate with no answer
   * owed in order: host loads and discovery (default `nc`). A flood of them
   * past what this process reads makes the server drop the connection as a
   * slow consumer: on its own connection that costs loads and discovery for a
   * moment, not every command endpoint.
   */
  readonly sideNc?: NatsConnection;
  readonly config: ServiceConfig;
  readonly logger: Logger;
  readonly clock?: Clock;
  /** Id generator for leases (default: 128 random bits from the CSPRNG, base64url). */
  readonly newId?: () => string;
  /** Told of every command and append (metrics). */
  readonly observer?: ServiceObserver;
  /** Called when the instance cannot serve (the server refused one of its subscriptions); it keeps running until stopped. */
  readonly onFatal?: (error: Error) => void;
  /** A start with no snapshot folds a kind's backlog on a worker thread from this stream sequence of its last event on (default 100,000). */
  readonly backlogWorkerMinSeq?: number;
}

/** The prefix under which `nc` takes its replies (nats.js keeps it in the connection's options). */
function inboxPrefixOf(nc: NatsConnection): string | undefined {
  return (nc as { options?: { inboxPrefix?: string } }).options?.inboxPrefix;
}

/** The kinds every instance serves. */
/** The module that folds a start's backlog on a worker thread. */
const BACKLOG_WORKER = new URL("./backlog-worker.ts", import.meta.url);

/** How long the server is given to say which account the service runs in (it answers in about a millisecond). */
const ACCOUNT_LOOK_MS = 1000;

/** Starts one service instance. */
export async function startService(options: StartServiceOptions): Promise<RunningService> {
  const { nc, config, logger } = options;
  const appendNc = options.appendNc ?? nc;
  const clock = options.clock ?? systemClock;
  const subjects = new Subjects(config.prefix);
  if (config.principals === "nats-request-info" && config.principalSourceCheck) {
    // The appending user may ask (nats-config grants it); a server that does not say is warned about, not refused.
    const warning = principalSourceProblem(await accountOf(appendNc, ACCOUNT_LOOK_MS));
    if (warning !== undefined) logger.warn(warning);
  }
  const log = await JetStreamEventLog.open(appendNc, {
    stream: subjects.eventStream,
    subjects: subjects.allEvents,
    dedupWindowMs: config.dedupWindowMs,
    replicas: config.replicas,
    opTimeoutMs: OP_TIMEOUT_MS,
  });
  const snapshots = await ObjectProjectionSnapshotStore.open(appendNc, subjects.projectionBucket, config.replicas);
  const observer = options.observer;
  const runtime = new ActorRuntime({
    log,
    subjects,
    clock,
    logger,
    dedupWindowMs: config.dedupWindowMs,
    snapshots,
    // The worker that folds a long backlog at start builds the kinds' logic from the same settings.
    backlogWorker: { entry: BACKLOG_WORKER, settings: config, minSeq: options.backlogWorkerMinSeq },
    requestTimeoutMs: config.requestTimeoutMs,
    opTimeoutMs: OP_TIMEOUT_MS,
    observer: observer && {
      appendFinished(seconds, outcome) {
        observer.appendFinished(seconds);
        if (outcome === "conflict") observer.appendConflict();
      },
    },
  });
  // Host loads are not events: every instance subscribes (no queue group) before it serves, so a load published after start is not missed.
  const hostLoads = new HostLoads(config.loadStaleMs, clock, { maxUnknown: config.maxUnknownLoads });
  const sideNc = options.sideNc ?? nc;
  const loadFeed = followHostLoads(sideNc, subjects, hostLoads, logger);
  await withDeadline(sideNc.flush(), OP_TIMEOUT_MS, "subscribe to host loads");
  const ctx: KindContext = { runtime, log, subjects, config, clock, logger, newId: options.newId ?? secureIds() };
  const modules: KindModule[] = [lockModule(ctx), proxyModule(ctx), routeModule(ctx, hostLoads)];
  const startedAt = performance.now();
  await Promise.all(modules.map(async (module) => module.start?.()));
  logger.info(
    {
      ms: Math.round(performance.now() - startedAt),
      projections: runtime.projections().map((p) => ({
        ...{ kind: p.kind, ids: p.size, seq: p.seq },
        ...(p.backlogOnWorker ? { backlogOnWorkerToSeq: p.startedFromSeq } : { fromSnapshotSeq: p.startedFromSeq }),
      })),
    },
    "projections caught up with the stream",
  );
  let stopping = false;
  const serve = endpointServer({
    ...{ logger, observer },
    ...{ operators: new Operators(config.operators), requirePrincipal: config.requirePrincipal },
  });
  const confinement = replyConfinement({
    ...{ prefix: config.prefix, enabled: config.replyCheck, logger },
    ownInboxes: [inboxPrefixOf(nc), inboxPrefixOf(appendNc), inboxPrefixOf(sideNc)],
    count: observer?.replyRefused && ((path) => observer.replyRefused?.(path)),
  });

  const micro = new MicroService(nc, {
    name: SERVICE_NAME,
    version: VERSION,
    description: "leasehold: proxy leases, route placement and fenced locks on JetStream",
    queue: SERVICE_NAME,
    metadata: { prefix: config.prefix },
    controlNc: sideNc,
    ...confinement,
    onError: (err, subject) => {
      logger.error({ err, subject }, `cannot serve ${subject}: ${err.message}`);
      options.onFatal?.(new Error(`cannot serve ${subject}: ${err.message}`, { cause: err }));
    },
    onUnsent: (err, subject) => logger.warn({ err, subject }, "an answer could not be sent; answered INTERNAL instead"),
    onThrown: (err, subject) => logger.error({ err, subject }, "handling a message threw; it was dropped"),
    // Headers are decoded only where the deployment says the server writes who sent a request.
    principals: config.principals,
    admission: {
      ...{ maxActive: config.maxActiveRequests, maxQueued: config.maxQueuedRequests },
      onShed: shedReport(logger, observer?.requestShed && ((reason) => observer.requestShed?.(reason))),
    },
  });
  const endpoints = modules.flatMap((m) => m.endpoints);
  mountEndpoints(micro, subjects, endpoints, serve);

  const commands = await CommandConsumer.start({
    nc: appendNc,
    replyNc: nc,
    subjects,
    endpoints,
    serve,
    logger,
    dedupWindowMs: config.dedupWindowMs,
    replicas: config.replicas,
    ackWaitMs: config.commandAckWaitMs,
    maxInFlight: config.commandConcurrency,
    fairShare: { clients: micro.requestClients, maxActive: config.maxActiveRequests },
    accountToken: config.principals === "nats-request-info",
    ...confinement,
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
    })().finally(() => (sweeping = false));
  }, config.sweepIntervalMs);
  sweep.unref();

  return {
    runtime,
    log,
    subjects,
    micro,
    commands,
    hostLoads,
    status: {
      activeActors: () => runtime.activeByKind(),
      readModelLag: () => perKind((kind) => runtime.projection(kind).lag),
      foldedSeq: () => Math.max(0, ...runtime.projections().map((p) => p.seq)),
      // A store that refuses appends for lack of space makes the instance unready (src/events/jetstream-event-log.ts).
      ready: () => !stopping && !log.storeSpace.full,
    },
    async stop(timeoutMs = 10_000) {
      stopping = true;
      clearInterval(sweep);
      for (const module of modules) module.stopping?.();
      const deadline = performance.now() + timeoutMs;
      const left = () => Math.max(1, deadline - performance.now());
      // Stop taking requests first (bounded: an unreachable server must not hold us), then answer what is in hand.
      await withDeadline(Promise.all([micro.stop(), commands.stop()]), left() / 2, "stop taking requests").catch((err: Error) =>
        logger.warn({ err }, "stopped taking requests without the server's confirmation"),
      );
      const unanswered = await runtime.stop(left());
      loadFeed.stop();
      await withDeadline(Promise.all(modules.map(async (module) => module.stop?.())), left(), "stop projections").catch((err: Error) =>
        logger.warn({ err }, "projections stopped without a last snapshot"),
      );
      return unanswered;
    },
  };
}

/** A record with one value per actor kind. */
function perKind(value: (kind: ActorKind) => number): Record<ActorKind, number> {
  return Object.fromEntries(ACTOR_KINDS.map((kind) => [kind, value(kind)])) as Record<ActorKind, number>;
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
