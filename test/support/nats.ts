/**
 * Helpers for integration tests: connections to the globalSetup nats-server,
 * service instances on a unique prefix, and a small request client that
 * returns status, headers and body of each reply.
 */
import { randomUUID } from "node:crypto";
import { inject } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { pino } from "pino";
import { resolveConfig, type ServiceConfig } from "../../src/config.ts";
import { startService, type RunningService } from "../../src/service/start-service.ts";
import type { Clock } from "../../src/actors/clock.ts";

/** The URL of the test nats-server. */
export function natsUrl(): string {
  return inject("natsUrl");
}

/** A fresh connection to the test nats-server. */
export function connectNats(): Promise<NatsConnection> {
  return connect({ servers: natsUrl(), name: "leasehold-test" });
}

/** A prefix no other test uses, so each test has its own streams and subjects. */
export function uniquePrefix(): string {
  return `t${randomUUID().replaceAll("-", "").slice(0, 12)}`;
}

/** A silent logger for in-process services. */
export const quietLogger = pino({ level: process.env.LEASEHOLD_TEST_LOG ?? "silent" });

/** A service instance with its own connection. */
export interface TestService {
  readonly service: RunningService;
  readonly nc: NatsConnection;
  readonly config: ServiceConfig;
  stop(): Promise<void>;
}

/** Starts an in-process service instance on `prefix`. */
export async function startTestService(prefix: string, overrides: Partial<ServiceConfig> = {}, clock?: Clock): Promise<TestService> {
  const nc = await connectNats();
  const config = resolveConfig({ ...overrides, prefix, nats: natsUrl() });
  const service = await startService({ nc, config, logger: quietLogger, ...(clock === undefined ? {} : { clock }) });
  let stopped = false;
  return {
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
}

/** A reply as a test sees it. */
export interface Reply<T = Record<string, unknown>> {
  /** `Nats-Service-Error-Code` as a number, undefined on success. */
  readonly status: number | undefined;
  /** `Nats-Service-Error`, undefined on success. */
  readonly errorHeader: string | undefined;
  readonly body: T;
  /** `body.error.code` on failure. */
  readonly code: string | undefined;
}

const encoder = new TextEncoder();

/** Sends raw bytes (or a JSON value) to `<prefix>.v1.<kind>.<op>` and decodes the reply. */
export async function call<T = Record<string, unknown>>(
  nc: NatsConnection,
  prefix: string,
  kindOp: string,
  body: unknown,
  timeout = 10_000,
): Promise<Reply<T>> {
  const data = body instanceof Uint8Array ? body : typeof body === "string" ? encoder.encode(body) : encoder.encode(JSON.stringify(body));
  const msg = await nc.request(`${prefix}.v1.${kindOp}`, data, { timeout });
  const status = msg.headers?.get("Nats-Service-Error-Code");
  const parsed = JSON.parse(msg.string()) as T & { error?: { code?: string } };
  return {
    status: status ? Number(status) : undefined,
    errorHeader: msg.headers?.get("Nats-Service-Error") || undefined,
    body: parsed,
    code: parsed.error?.code,
  };
}
