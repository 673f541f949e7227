/**
 * An in-process service instance with its HTTP side on a free loopback port.
 *
 * Until src/service.ts reports to ServiceMetrics itself, this helper meters
 * the running instance from outside, at the same two points the runtime will:
 * every turn of its actor host (kind, op, outcome, duration) and every append
 * of its event log (duration, expected-sequence conflicts). The gauges come
 * from the HTTP side's own source (the stream fold and the actor host).
 */
import { startHttp, ServiceMetrics, type RunningHttp } from "../../../src/http/index.ts";
import { meterAppends, meterCommand } from "../../../src/http/instrument.ts";
import type { ServiceConfig } from "../../../src/config.ts";
import { quietLogger, startTestService, type TestService } from "../../support/nats.ts";

/** A service with metrics and HTTP. */
export interface HttpTestService {
  readonly test: TestService;
  readonly metrics: ServiceMetrics;
  readonly http: RunningHttp;
  /** `http://127.0.0.1:<port>` */
  readonly base: string;
  stop(): Promise<void>;
}

/** Meters `test`'s turns and appends into `metrics` (the stand-in described above). */
export function meterFromOutside(test: TestService, metrics: ServiceMetrics): void {
  const host = test.service.host;
  const execute = host.execute.bind(host);
  host.execute = (kind, id, command, ...rest) => meterCommand(metrics, kind, command.op, () => execute(kind, id, command, ...rest))();
  meterAppends(test.service.log, metrics);
}

/** Starts a service on `prefix` and its HTTP side on 127.0.0.1, port chosen by the system. */
export async function startHttpTestService(prefix: string, overrides: Partial<ServiceConfig> = {}): Promise<HttpTestService> {
  const test = await startTestService(prefix, overrides);
  const metrics = new ServiceMetrics();
  meterFromOutside(test, metrics);
  const { service, nc } = test;
  const http = await startHttp({
    listen: "127.0.0.1:0",
    service: { nc, log: service.log, subjects: service.subjects, host: service.host },
    metrics,
    logger: quietLogger,
  });
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
