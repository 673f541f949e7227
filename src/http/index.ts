/**
 * The HTTP side of a service instance: metrics, health, readiness and the
 * live dashboard. {@link startHttp} puts the pieces together for `serve`.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import type { Logger } from "pino";
import type { EventLog } from "../events/event-log.ts";
import type { Subjects } from "../contract/subjects.ts";
import { DashboardFeed, type HostLoadSource } from "./dashboard-feed.ts";
import { ConnectionWatch, feedMetricsSource } from "./feed-source.ts";
import type { MetricsSource, PerKind, ServiceMetrics } from "./metrics.ts";
import { startHttpServer, type HttpServerSettings } from "./server.ts";
import { projectionStates, type ProjectionSource, type ServiceStates } from "./service-states.ts";

export * from "./metrics.ts";
export * from "./dashboard-feed.ts";
export * from "./feed-source.ts";
export * from "./server.ts";
export * from "./service-states.ts";

/** Where `serve` listens when it runs its own nats-server and no `--http` is given. */
export const DEFAULT_LOCAL_HTTP = "127.0.0.1:7420";

/** A running service instance as {@link httpParts} reads it (src/service's `RunningService` is one). */
export interface HttpServiceInstance {
  readonly log: EventLog;
  readonly subjects: Subjects;
  readonly runtime: ProjectionSource;
  readonly status: NonNullable<HttpServiceParts["status"]> & { foldedSeq(): number };
  readonly hostLoads?: HostLoadSource;
}

/** What {@link startHttp} needs, taken from a running instance and its connection. */
export function httpParts(nc: NatsConnection, service: HttpServiceInstance): HttpServiceParts {
  return {
    nc,
    log: service.log,
    subjects: service.subjects,
    states: projectionStates(service.runtime, () => service.status.foldedSeq()),
    status: service.status,
    ...(service.hostLoads === undefined ? {} : { hostLoads: service.hostLoads }),
  };
}

/** What {@link startHttp} needs of a running instance. */
export interface HttpServiceParts {
  readonly nc: NatsConnection;
  readonly log: EventLog;
  readonly subjects: Subjects;
  /** The instance's folded states (its projections), which the dashboard shows. */
  readonly states: ServiceStates;
  /** The loads hosts publish, as the instance keeps them (the dashboard shows them). */
  readonly hostLoads?: HostLoadSource;
  /** What the runtime reports of itself; replaces the stream fold's estimates of actors, lag and readiness. */
  readonly status?: {
    activeActors(): PerKind;
    readModelLag(): PerKind;
    ready(): boolean;
  };
}

/** The HTTP side, running. */
export interface RunningHttp {
  readonly url: string;
  readonly feed: DashboardFeed;
  readonly source: MetricsSource;
  stop(): Promise<void>;
}

/**
 * Binds `listen`, then starts following the stream: `/readyz` answers 503
 * until the dashboard's fold (and the runtime, through `overrides.ready`)
 * has caught up. Attaches the source to `metrics`.
 */
export async function startHttp(options: {
  readonly listen: string;
  readonly service: HttpServiceParts;
  readonly metrics: ServiceMetrics;
  readonly logger: Logger;
  readonly overrides?: Partial<MetricsSource>;
  /** The HTTP server's own settings (see {@link HttpServerOptions}; each has its default). */
  readonly server?: HttpServerSettings;
}): Promise<RunningHttp> {
  const { service, metrics, logger } = options;
  const status = service.status;
  const overrides: Partial<MetricsSource> = {
    ...(status === undefined
      ? {}
      : { activeActors: () => status.activeActors(), readModelLag: () => status.readModelLag(), ready: () => status.ready() }),
    ...options.overrides,
  };
  const feed = new DashboardFeed({
    log: service.log,
    states: service.states,
    subjects: service.subjects,
    logger,
    ...(service.hostLoads === undefined ? {} : { hostLoads: service.hostLoads }),
  });
  const source = feedMetricsSource({
    feed,
    connection: new ConnectionWatch(service.nc),
    overrides,
  });
  metrics.attach(source);
  const server = await startHttpServer({
    listen: options.listen,
    metrics,
    source,
    feed,
    logger,
    ...options.server,
  });
  try {
    await feed.start();
  } catch (e) {
    await server.stop();
    throw e;
  }
  return {
    url: server.url,
    feed,
    source,
    async stop() {
      await server.stop();
      await feed.stop();
    },
  };
}
