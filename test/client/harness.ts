/**
 * Fixtures for the client tests: a service on its own prefix with a client on
 * its own connection, a relay that stands between a client and the service to
 * lose replies on purpose, and assertions on the typed errors.
 */
import { expect } from "vitest";
import type { Msg, NatsConnection } from "@nats-io/nats-core";
import { LeaseholdClient, LeaseholdError, type LeaseholdClientOptions } from "../../src/index.ts";
import type { ServiceConfig } from "../../src/config.ts";
import { useLockHarness } from "../support/lock-fixtures.ts";
import { uniquePrefix, type TestService } from "../support/nats.ts";

/** A service and a client of it, both stopped after the test. */
export interface ClientFixture {
  readonly prefix: string;
  readonly svc: TestService;
  readonly client: LeaseholdClient;
  /** The client's own connection. */
  readonly nc: NatsConnection;
}

/** Test resources for client tests, released after each test of the calling file. */
export function useClientHarness() {
  const h = useLockHarness();
  const harness = {
    ...h,
    /** Starts a service on a fresh prefix and a client of it on a separate connection. */
    async start(overrides: Partial<ServiceConfig> = {}, options: LeaseholdClientOptions = {}): Promise<ClientFixture> {
      const prefix = uniquePrefix();
      const svc = await h.service(prefix, overrides);
      const nc = await h.connect();
      return { prefix, svc, nc, client: new LeaseholdClient(nc, { prefix, ...options }) };
    },
    /** Another client of `prefix` on its own connection. */
    async client(prefix: string, options: LeaseholdClientOptions = {}): Promise<LeaseholdClient> {
      return new LeaseholdClient(await h.connect(), { prefix, ...options });
    },
    /**
     * A relay serving `<relayPrefix>.v1.>`: each request is forwarded to the
     * real service at `<target>.v1.<kind>.<op>` (so it takes effect), and the
     * reply is passed back only when `answer(n)` says so (n counts from 1).
     */
    async relay(target: string, answer: (n: number) => boolean, forward = true): Promise<Relay> {
      const nc = await h.connect();
      const relayPrefix = uniquePrefix();
      const seen: { subject: string; body: Record<string, unknown> }[] = [];
      const sub = nc.subscribe(`${relayPrefix}.v1.>`, {
        callback: (_err, msg: Msg) => {
          const body = msg.json<Record<string, unknown>>();
          seen.push({ subject: msg.subject, body });
          const n = seen.length;
          const real = `${target}.v1.${msg.subject.slice(relayPrefix.length + ".v1.".length)}`;
          void (async () => {
            if (!forward) return;
            const reply = await nc.request(real, msg.data, { timeout: 10_000, ...(msg.headers ? { headers: msg.headers } : {}) });
            if (answer(n)) msg.respond(reply.data, reply.headers ? { headers: reply.headers } : undefined);
          })();
        },
      });
      await nc.flush();
      h.defer(() => sub.unsubscribe());
      return { prefix: relayPrefix, seen };
    },
  };
  return harness;
}

/** A relay's prefix (point a client at it) and every request it saw. */
export interface Relay {
  readonly prefix: string;
  readonly seen: { subject: string; body: Record<string, unknown> }[];
}

/** Awaits `promise`, expects it to reject with `Class`, checks the contract fields, and returns the error. */
export async function expectRejects<E extends LeaseholdError>(
  promise: Promise<unknown>,
  Class: abstract new (...args: never[]) => E,
  code: string,
  status: number,
): Promise<E> {
  let caught: unknown;
  try {
    await promise;
  } catch (e) {
    caught = e;
  }
  expect(caught, `expected ${Class.name}`).toBeInstanceOf(Class);
  expect(caught).toBeInstanceOf(LeaseholdError);
  const error = caught as E;
  expect(error.code).toBe(code);
  expect(error.status).toBe(status);
  expect(error.name).toBe(Class.name);
  expect(error.message.length).toBeGreaterThan(0);
  return error;
}
