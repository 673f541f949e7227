/**
 * Fixtures for the proxy integration tests: a proxy client over request/reply,
 * contract assertions for success and failure replies, cleanup of services and
 * connections, and the proxies' history read back from the stream.
 */
import { afterEach, expect } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { decodeEvent, isUnparsable, type EventLog, type RecordedEvent, type Subjects } from "../../src/events/index.ts";
import type { ServiceConfig } from "../../src/config.ts";
import type { Clock } from "../../src/actors/index.ts";
import { call, connectNats, startTestService, type Reply, type TestService } from "./nats.ts";

/** `stats` of an acquisition. */
export interface ProxyStats {
  readonly considered: number;
  readonly unhealthy: number;
  readonly inCooldown: number;
  readonly atCapacity: number;
}

/** A proxy reply body: any of the contract's success shapes, or an error. */
export interface ProxyBody {
  readonly proxy?: string;
  readonly lease?: { readonly id: string; readonly proxy: string; readonly target: string; readonly expiresAt: string };
  readonly stats?: ProxyStats;
  readonly cooldownUntilAt?: string;
  readonly proxies?: {
    proxy: string;
    maxLeases: number;
    latencyMs: number;
    labels: Record<string, string>;
    healthy: boolean;
    active: number;
    cooldowns: { target: string; untilAt: string }[];
  }[];
  readonly counts?: Record<string, number>;
  readonly error?: { readonly code: string; readonly message: string } & Record<string, unknown>;
}

/** Requests to the proxy endpoints of one prefix. */
export interface ProxyClient {
  call(op: "register" | "remove" | "acquire" | "release" | "report" | "list" | "counts", body: unknown): Promise<Reply<ProxyBody>>;
}

/** A proxy client for `prefix` on `nc`. */
export function proxyClient(nc: NatsConnection, prefix: string, timeoutMs = 10_000): ProxyClient {
  return { call: (op, body) => call<ProxyBody>(nc, prefix, `proxy.${op}`, body, timeoutMs) };
}

/** Asserts a success reply (no error headers, no error body) and returns its body. */
export function expectOk(reply: Reply<ProxyBody>): ProxyBody {
  expect(reply.status, `unexpected failure ${JSON.stringify(reply.body)}`).toBeUndefined();
  expect(reply.errorHeader).toBeUndefined();
  expect(reply.body.error).toBeUndefined();
  return reply.body;
}

/** Asserts a failure reply as the contract shapes it: status header, code, `Nats-Service-Error` = `error.message`, details. */
export function expectFailure(reply: Reply<ProxyBody>, status: number, code: string, details: Record<string, unknown> = {}): void {
  expect(reply.body.error?.code, `expected ${code}, got ${JSON.stringify(reply.body)}`).toBe(code);
  expect(reply.status).toBe(status);
  expect(reply.code).toBe(code);
  expect(reply.body.error!.message.length).toBeGreaterThan(0);
  expect(reply.errorHeader).toBe(reply.body.error!.message);
  expect(reply.body.error).toMatchObject(details);
}

/** Services and connections stopped or closed after each test of the calling file. */
export interface ProxyIntHarness {
  service(prefix: string, overrides?: Partial<ServiceConfig>, clock?: Clock): Promise<TestService>;
  connect(): Promise<NatsConnection>;
}

/** A {@link ProxyIntHarness} whose resources are released (last first) after each test. */
export function useProxyIntHarness(): ProxyIntHarness {
  const tasks: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    const errors: unknown[] = [];
    for (const task of tasks.splice(0).reverse()) {
      try {
        await task();
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length > 0) throw errors[0];
  });
  return {
    async service(prefix, overrides = {}, clock) {
      const svc = await startTestService(prefix, overrides, clock);
      tasks.push(() => svc.stop());
      return svc;
    },
    async connect() {
      const nc = await connectNats();
      tasks.push(() => nc.close());
      return nc;
    },
  };
}

/** Every proxy event in the stream, in order (fails the test if one does not parse). */
export async function proxyEvents(log: EventLog, subjects: Subjects): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for await (const m of log.readStream({ filter: subjects.eventsOfKind("proxy") })) {
    const entry = decodeEvent(m.payload, m.seq, m.msgId);
    if (isUnparsable(entry)) throw new Error(`unparsable proxy event at ${m.seq}: ${entry.reason}`);
    out.push(entry);
  }
  return out;
}
