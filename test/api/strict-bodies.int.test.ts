/**
 * Strict request bodies (1.2) through a running service: on every op, a
 * request with a field the op does not define is answered BAD_REQUEST with
 * details `{field}` (and both error headers), and so is every mutating op
 * sent as a durable command, on `<prefix>.cmd-errors.<kind>.<op>`; nothing
 * is appended for any of them.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { Subjects } from "../../src/contract/subjects.ts";
import { call, connectNats, startTestService, uniquePrefix, type TestService } from "../support/nats.ts";
import { collect, publishCommand } from "../support/durable.ts";
import { validBodies, type KindOp } from "../support/op-bodies.ts";

let prefix: string;
let svc: TestService;
let nc: NatsConnection;
const OPS = Object.keys(validBodies("x")) as KindOp[];
const READS = new Set<KindOp>(["lock.get", "proxy.list", "proxy.counts", "host.list", "route.get", "route.snapshot"]);

beforeAll(async () => {
  prefix = uniquePrefix();
  svc = await startTestService(prefix);
  nc = await connectNats();
});
afterAll(async () => {
  await nc?.drain();
  await svc?.stop();
});

async function eventCount(): Promise<number> {
  const jsm = await jetstreamManager(nc);
  return (await jsm.streams.info(new Subjects(prefix).eventStream)).state.messages;
}

describe("strict request bodies over NATS", () => {
  it.each(OPS)("%s: an unknown field is BAD_REQUEST naming it, with both headers", async (op) => {
    // The first unknown in the body's order is named, not the second.
    const valid = Object.entries(validBodies(op)[op]).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
    const reply = await call(nc, prefix, op, `{${[`"requestId":"q-${op}"`, '"ttlMS":5000', ...valid, '"zzz":1'].join(",")}}`);
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ error: { code: "BAD_REQUEST", message: expect.stringContaining("unknown field"), field: "ttlMS" } });
    expect(reply.errorHeader).toBe((reply.body as { error: { message: string } }).error.message);
  });

  it("appends nothing for any of them, and the same bodies without the unknown field are served", async () => {
    expect(await eventCount()).toBe(0);
    const reply = await call(nc, prefix, "lock.acquire", { name: "db", owner: "me", ttlMs: 1000, waitMs: 0, requestId: "r1" });
    expect(reply.status).toBeUndefined();
    expect(await eventCount()).toBe(1);
  });

  it("refuses a durable command with an unknown field on <prefix>.cmd-errors.<kind>.<op>, for every mutating op", async () => {
    const mutating = OPS.filter((op) => !READS.has(op));
    const errors = collect(nc, `${prefix}.cmd-errors.>`);
    try {
      for (const op of mutating) {
        await publishCommand(nc, prefix, op, { ...validBodies(`d-${op}`)[op], requestId: `d-${op}`, colour: "blue" });
      }
      await vi.waitFor(() => expect(errors.messages.length).toBe(mutating.length), { timeout: 10_000, interval: 20 });
      const bySubject = new Map(errors.messages.map((m) => [m.subject, JSON.parse(m.string()) as unknown]));
      for (const op of mutating) {
        expect(bySubject.get(`${prefix}.cmd-errors.${op}`)).toEqual({
          error: { code: "BAD_REQUEST", message: expect.stringContaining('"colour"'), field: "colour" },
        });
      }
    } finally {
      errors.stop();
    }
    expect(await eventCount()).toBe(1);
  });
});
