/**
 * An in-process service instance that reports to a ServiceMetrics (its
 * `observer`), with its HTTP side on 127.0.0.1 and a port the system picks.
 */
import { afterEach } from "vitest";
import { connect } from "@nats-io/transport-node";
import { resolveConfig, type ServiceConfig } from "../../../src/config.ts";
import { startService, type RunningService } from "../../../src/service/start-service.ts";
import { httpParts, startHttp, ServiceMetrics, type HttpServerSettings, type RunningHttp } from "../../../src/http/index.ts";
import { natsUrl, quietLogger, type TestService } from "../../support/nats.ts";

/** A service with metrics and HTTP. */
export interface HttpTestService {
  readonly test: TestService;
  readonly metrics: ServiceMetrics;
  readonly http: RunningHttp;
  /** `http://127.0.0.1:<port>` */
  readonly base: string;
  stop(): Promise<void>;
}

/** Options of the HTTP side a test may change (each has the server's default). */
export type HttpOptions = HttpServerSettings;

/** Starts the HTTP side of `service` on a free loopback port. */
export function startHttpFor(test: TestService, metrics: ServiceMetrics, http: HttpOptions = {}): Promise<RunningHttp> {
  const { service, nc } = test;
  return startHttp({
    listen: "127.0.0.1:0",
    service: httpParts(nc, service),
    metrics,
    logger: quietLogger,
    server: http,
  });
}

/** Starts a service on `prefix` reporting to a new ServiceMetrics. */
export async function startObservedService(
  prefix: string,
  overrides: Partial<ServiceConfig> = {},
): Promise<{ test: TestService; metrics: ServiceMetrics }> {
  const nc = await connect({ servers: natsUrl(), name: "leasehold-test" });
  const config = resolveConfig({ ...overrides, prefix, nats: natsUrl() });
  const metrics = new ServiceMetrics();
  const service: RunningService = await startService({ nc, config, logger: quietLogger, observer: metrics });
  let stopped = false;
  const test: TestService = {
    service,
    nc,
    config,
    async stop() {
      if (stopped) return;
      stopped = true;
      await service.stop();
      await nc.drain();
    },
  };
  return { test, metrics };
}

/** Starts a service on `prefix` and its HTTP side. */
export async function startHttpTestService(
  prefix: string,
  overrides: Partial<ServiceConfig> = {},
  httpOptions: HttpOptions = {},
): Promise<HttpTestService> {
  const { test, metrics } = await startObservedService(prefix, overrides);
  const http = await startHttpFor(test, metrics, httpOptions);
  return {
    test,
    metrics,
    http,
    base: http.url,
    async stop() {
      await http.stop();
      await test.stop();
    },
  };
}

/** A start of {@link startHttpTestService} whose services are stopped after each test of the file that made it. */
export function httpServicesPerTest(): typeof startHttpTestService {
  const started: HttpTestService[] = [];
  afterEach(async () => {
    for (const s of started.splice(0)) await s.stop();
  });
  return async (...args) => {
    const s = await startHttpTestService(...args);
    started.push(s);
    return s;
  };
}
