/**
 * Fixtures for the lock integration tests: a typed lock client over
 * request/reply, contract assertions for success and failure replies, cleanup
 * of services and connections, raw (hostile) stream writes, and readers of a
 * lock's history and of the service framework's discovery subjects.
 */
import { expect, vi } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { isUnparsable, type EventEnvelope, type HistoryEntry, type RecordedEvent } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import type { RunningService } from "../../src/service/start-service.ts";
import { call, type Reply } from "./nats.ts";
import { useTestServices, type TestServices } from "./cleanup.ts";
import { expectOk } from "./replies.ts";
import type { LockLease } from "../../src/contract/messages.ts";

export { useCleanup } from "./cleanup.ts";
export { expectFailure, expectOk } from "./replies.ts";

/** The wire shape of a lease, as the contract types it. */
export type Lease = LockLease;

/** A lock reply body: a lease, `{lease: null}`, `{}` or an error. */
export interface LockBody {
  readonly lease?: Lease | null;
  /** Acquires waiting in the lock's queue (`lock.get`, 1.1). */
  readonly waiters?: number;
  readonly error?: { readonly code: string; readonly message: string } & Record<string, unknown>;
}

/** Requests to the five lock endpoints of one prefix. */
export interface LockClient {
  acquire(body: unknown): Promise<Reply<LockBody>>;
  renew(body: unknown): Promise<Reply<LockBody>>;
  release(body: unknown): Promise<Reply<LockBody>>;
  get(body: unknown): Promise<Reply<LockBody>>;
  reset(body: unknown): Promise<Reply<LockBody>>;
}

/** A lock client for `prefix` on `nc` (bodies may be JSON values, raw text or raw bytes). */
export function lockClient(nc: NatsConnection, prefix: string, timeoutMs = 10_000): LockClient {
  const op = (name: string) => (body: unknown) => call<LockBody>(nc, prefix, `lock.${name}`, body, timeoutMs);
  return { acquire: op("acquire"), renew: op("renew"), release: op("release"), get: op("get"), reset: op("reset") };
}

/** Asserts a success reply carrying a lease and returns the lease. */
export function expectLease(reply: Reply<LockBody>): Lease {
  const body = expectOk(reply);
  expect(body.lease).toBeTruthy();
  return body.lease!;
}

/** Test resources that are stopped or closed after each test. */
export type LockHarness = TestServices;

/** A {@link LockHarness} whose resources are released after each test of the calling file. */
export function useLockHarness(): LockHarness {
  return useTestServices();
}

/** Every message on a lock's subject, decoded as the service decodes it. */
export async function lockHistory(service: RunningService, name: string): Promise<HistoryEntry[]> {
  const messages = await service.log.readSubject(service.subjects.event("lock", name), 1);
  return messages.map((m) => decodeEvent(m.payload, m.seq, m.msgId));
}

/** The events on a lock's subject (fails the test if one does not parse). */
export async function lockEvents(service: RunningService, name: string): Promise<RecordedEvent[]> {
  const history = await lockHistory(service, name);
  for (const entry of history) expect(isUnparsable(entry), JSON.stringify(entry)).toBe(false);
  return history as RecordedEvent[];
}

/** Data of an event as a plain record (tests read fields by name). */
export function dataOf(event: EventEnvelope): Record<string, unknown> {
  return event.data as Record<string, unknown>;
}

/** Polls `lock.get` until the lock is free (its lease expired or released). */
export async function waitUntilFree(locks: LockClient, name: string, timeoutMs = 10_000): Promise<void> {
  await vi.waitFor(
    async () => {
      const body = expectOk(await locks.get({ name }));
      if (body.lease !== null) throw new Error(`lock ${name} is still held: ${JSON.stringify(body.lease)}`);
    },
    { timeout: timeoutMs, interval: 20 },
  );
}

const encoder = new TextEncoder();

/** An event envelope for a raw write to a lock's subject. */
export function lockEnvelope(name: string, type: string, data: Record<string, unknown>, at = new Date()): EventEnvelope {
  return { type, v: 1, at: at.toISOString(), kind: "lock", id: name, data };
}

/** Publishes straight into the event stream, bypassing the service; returns the stream sequence. */
export async function writeRaw(nc: NatsConnection, subject: string, payload: EventEnvelope | Uint8Array): Promise<number> {
  const bytes = payload instanceof Uint8Array ? payload : encoder.encode(JSON.stringify(payload));
  const ack = await jetstream(nc).publish(subject, bytes);
  return ack.seq;
}

/** One endpoint's entry in a `$SRV.STATS` reply. */
export interface EndpointStats {
  readonly name: string;
  readonly subject: string;
  readonly queue_group: string;
  readonly num_requests: number;
  readonly num_errors: number;
  readonly last_error: string;
}

/** A service framework reply (`$SRV.PING`, `$SRV.INFO` or `$SRV.STATS`). */
export interface SrvReply {
  readonly type: string;
  readonly name: string;
  readonly id: string;
  readonly version: string;
  readonly metadata: Record<string, string>;
  readonly description?: string;
  readonly endpoints?: EndpointStats[];
}

/** Asks one verb of one service instance (`$SRV.<verb>.leasehold.<id>`). */
export async function srv(nc: NatsConnection, verb: "PING" | "INFO" | "STATS", id: string): Promise<SrvReply> {
  const msg = await nc.request(`$SRV.${verb}.leasehold.${id}`, undefined, { timeout: 5000 });
  return msg.json<SrvReply>();
}

/** Every answer to `subject` that arrives until the responders fall silent. */
export async function srvAll(nc: NatsConnection, subject: string): Promise<SrvReply[]> {
  const replies: SrvReply[] = [];
  const it = await nc.requestMany(subject, undefined, { strategy: "stall", stall: 300, maxWait: 3000 });
  for await (const msg of it) replies.push(msg.json<SrvReply>());
  return replies;
}
