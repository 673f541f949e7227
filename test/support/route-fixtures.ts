/**
 * Fixtures for the route integration tests: a typed client over
 * request/reply, contract assertions for success and failure replies,
 * cleanup of services and connections, and a reader of the route and host
 * events in the stream.
 */
import { expect } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { isUnparsable, type RecordedEvent } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import type { RunningService } from "../../src/service/start-service.ts";
import type { RouteLeaseView } from "../../src/route/state.ts";
import { call, type Reply } from "./nats.ts";
import { useTestServices, type TestServices } from "./cleanup.ts";

export { expectOk as ok, expectFailure as failed } from "./replies.ts";

/** Any reply body of the host and route endpoints. */
export interface RouteBody {
  readonly host?: string;
  readonly reused?: boolean;
  readonly from?: string;
  readonly released?: number;
  readonly pinned?: string;
  /** Route leases as `route.get` and `route.snapshot` show them. */
  readonly leases?: RouteLeaseView[];
  readonly hosts?: { host: string; healthy: boolean; draining: boolean; active: number }[];
  readonly error?: { readonly code: string; readonly message: string } & Record<string, unknown>;
}

/** Requests to the host and route endpoints of one prefix. */
export interface RouteClient {
  setHost(body: unknown): Promise<Reply<RouteBody>>;
  listHosts(): Promise<Reply<RouteBody>>;
  acquire(body: unknown): Promise<Reply<RouteBody>>;
  move(body: unknown): Promise<Reply<RouteBody>>;
  candidates(body: unknown): Promise<Reply<RouteBody>>;
  pin(body: unknown): Promise<Reply<RouteBody>>;
  unpin(body: unknown): Promise<Reply<RouteBody>>;
  release(body: unknown): Promise<Reply<RouteBody>>;
  get(body: unknown): Promise<Reply<RouteBody>>;
  snapshot(): Promise<Reply<RouteBody>>;
}

/** A route client for `prefix` on `nc`. */
export function routeClient(nc: NatsConnection, prefix: string, timeoutMs = 10_000): RouteClient {
  const op = (kindOp: string) => (body: unknown) => call<RouteBody>(nc, prefix, kindOp, body, timeoutMs);
  return {
    setHost: op("host.set"),
    listHosts: () => op("host.list")({}),
    acquire: op("route.acquire"),
    move: op("route.move"),
    candidates: op("route.candidates"),
    pin: op("route.pin"),
    unpin: op("route.unpin"),
    release: op("route.release"),
    get: op("route.get"),
    snapshot: () => op("route.snapshot")({}),
  };
}

/** Resources stopped or closed after each test of the calling file (last first). */
export type RouteHarnessInt = TestServices;

/** A {@link RouteHarnessInt} whose resources are released after each test. */
export function useRouteServices(): RouteHarnessInt {
  return useTestServices();
}

/** Every event of `kind` in the stream, in stream order, decoded as the service decodes it. */
export async function eventsOfKind(service: RunningService, kind: "host" | "route"): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  for await (const m of service.log.readStream({ filter: service.subjects.eventsOfKind(kind) })) {
    const entry = decodeEvent(m.payload, m.seq, m.msgId);
    expect(isUnparsable(entry), JSON.stringify(entry)).toBe(false);
    if (!isUnparsable(entry)) out.push(entry);
  }
  return out;
}

/** Data of an event as a plain record. */
export function dataOf(e: RecordedEvent): Record<string, unknown> {
  return e.event.data as Record<string, unknown>;
}
