/**
 * Contract assertions on service replies, for every kind: a success has no
 * error headers and no error body; a failure carries the status header, the
 * code in the body, and `Nats-Service-Error` equal to `error.message`.
 */
import { expect } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { call, type Reply } from "./nats.ts";

/** A reply body that may carry a contract error. */
export interface ErrorBody {
  readonly error?: { readonly code: string; readonly message: string } & Record<string, unknown>;
}

/** Asserts a success reply (no error headers, no error body) and returns its body. */
export function expectOk<B extends ErrorBody>(reply: Reply<B>): B {
  expect(reply.status, `unexpected failure ${JSON.stringify(reply.body)}`).toBeUndefined();
  expect(reply.errorHeader).toBeUndefined();
  expect(reply.body.error).toBeUndefined();
  return reply.body;
}

/**
 * Asserts a failure reply as the contract shapes it: the status header, the
 * code in the body, `Nats-Service-Error` equal to `error.message`, and the
 * error carrying `details`.
 */
export function expectFailure(reply: Reply<ErrorBody>, status: number, code: string, details: Record<string, unknown> = {}): void {
  expect(reply.body.error?.code, `expected ${code}, got ${JSON.stringify(reply.body)}`).toBe(code);
  expect(reply.status).toBe(status);
  expect(reply.code).toBe(code);
  expect(typeof reply.body.error?.message).toBe("string");
  expect(reply.body.error!.message.length).toBeGreaterThan(0);
  expect(reply.errorHeader).toBe(reply.body.error!.message);
  expect(reply.body.error).toMatchObject(details);
}

/** A sender of `<kind>.<op>` requests that must succeed (the test fails with the reply body otherwise); resolves with the body. */
export function okSender(nc: NatsConnection, prefix: string): (kindOp: string, body: unknown) => Promise<Record<string, unknown>> {
  return async (kindOp, body) => {
    const r = await call(nc, prefix, kindOp, body);
    expect(r.status, JSON.stringify(r.body)).toBeUndefined();
    return r.body;
  };
}
