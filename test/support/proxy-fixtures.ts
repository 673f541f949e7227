/**
 * Fixtures for the proxy integration tests: a proxy client over request/reply,
 * contract assertions for success and failure replies, cleanup of services and
 * connections, and the proxies' history read back from the stream.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import type { EventLog } from "../../src/events/event-log.ts";
import type { RecordedEvent } from "../../src/events/envelope.ts";
import type { Subjects } from "../../src/contract/subjects.ts";
import { call, type Reply } from "./nats.ts";
import { useTestServices, type TestServices } from "./cleanup.ts";
import { decodeOrThrow } from "./event-builders.ts";

export { expectFailure, expectOk } from "./replies.ts";

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

/** Services and connections stopped or closed after each test of the calling file. */
export type ProxyIntHarness = TestServices;

/** A {@link ProxyIntHarness} whose resources are released (last first) after each test. */
export function useProxyIntHarness(): ProxyIntHarness {
  return useTestServices();
}

/** Every proxy event in the stream, in order (fails the test if one does not parse). */
export async function proxyEvents(log: EventLog, subjects: Subjects): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for await (const m of log.readStream({ filter: subjects.eventsOfKind("proxy") })) out.push(decodeOrThrow(m, "unparsable proxy event"));
  return out;
}
