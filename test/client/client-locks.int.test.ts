/**
 * client.lock against a real service: every method's typed reply, every lock
 * refusal as its own error class with its details, the automatic requestId,
 * the one retry after a timeout (answered from the first reply), and failures
 * without an answer kept apart from contract errors.
 */
import { describe, expect, it } from "vitest";
import {
  AlreadyReleasedError,
  BadRequestError,
  CorruptError,
  LeaseExistsError,
  LeaseholdClient,
  LeaseholdError,
  LeaseholdTimeoutError,
  LeaseholdTransportError,
  NotHeldError,
  TtlExceedsMaxError,
  UnavailableError,
} from "../../src/index.ts";
import { jetstreamManager } from "@nats-io/jetstream";
import { lockEvents, writeRaw } from "../support/lock-fixtures.ts";
import { uniquePrefix } from "../support/nats.ts";
import { expectRejects, useClientHarness } from "./harness.ts";

const h = useClientHarness();

describe("client.lock", () => {
  it("acquire, get, renew, release and reset answer the contract's typed replies", async () => {
    const { client } = await h.start();
    const before = Date.now();
    const { lease } = await client.lock.acquire({ name: "jobs", owner: "alice", ttlMs: 10_000 });
    expect(lease).toMatchObject({ name: "jobs", owner: "alice", generation: 1, ttlMs: 10_000 });
    expect(typeof lease.etag).toBe("string");
    expect(Date.parse(lease.expiresAt)).toBeGreaterThanOrEqual(before + 10_000);
    expect(await client.lock.get({ name: "jobs" })).toEqual({ lease, waiters: 0 });

    const renewed = (await client.lock.renew({ name: "jobs", owner: "alice", etag: lease.etag, ttlMs: 20_000 })).lease;
    expect(renewed).toMatchObject({ name: "jobs", owner: "alice", generation: 1, ttlMs: 20_000 });
    expect(renewed.etag).not.toBe(lease.etag);

    expect(await client.lock.release({ name: "jobs", etag: renewed.etag })).toEqual({});
    expect(await client.lock.get({ name: "jobs" })).toEqual({ lease: null, waiters: 0 });

    const second = (await client.lock.acquire({ name: "jobs", owner: "bob" })).lease;
    // The server's default TTL applies when none is given.
    expect(second).toMatchObject({ owner: "bob", generation: 2, ttlMs: 30_000 });
    expect(await client.lock.reset({ name: "jobs" })).toEqual({});
    expect(await client.lock.get({ name: "jobs" })).toEqual({ lease: null, waiters: 0 });
    expect((await client.lock.acquire({ name: "jobs", owner: "carol" })).lease.generation).toBe(3);
  });

  it("throws one error class per refusal, carrying the code's details", async () => {
    const { client, svc } = await h.start({ maxTtlMs: 20_000, lockTtlMs: 10_000 });

    const bad = await expectRejects(client.lock.acquire({ name: "", owner: "alice" }), BadRequestError, "BAD_REQUEST", 400);
    expect(bad.message).toMatch(/name/);

    const tooLong = await expectRejects(
      client.lock.acquire({ name: "l", owner: "alice", ttlMs: 20_001 }),
      TtlExceedsMaxError,
      "TTL_EXCEEDS_MAX",
      400,
    );
    expect([tooLong.ttlMs, tooLong.maxTtlMs]).toEqual([20_001, 20_000]);
    expect(tooLong.details).toEqual({ ttlMs: 20_001, maxTtlMs: 20_000 });

    const { lease } = await client.lock.acquire({ name: "l", owner: "alice" });
    const exists = await expectRejects(client.lock.acquire({ name: "l", owner: "alice" }), LeaseExistsError, "LEASE_EXISTS", 409);
    expect([exists.owner, exists.expiresAt]).toEqual(["alice", lease.expiresAt]);

    await expectRejects(client.lock.renew({ name: "l", owner: "mallory", etag: lease.etag }), NotHeldError, "NOT_HELD", 409);
    await expectRejects(client.lock.release({ name: "l", etag: "stale" }), NotHeldError, "NOT_HELD", 409);
    await expectRejects(client.lock.release({ name: "never-held", etag: "x" }), AlreadyReleasedError, "ALREADY_RELEASED", 410);

    // A message on the lock's subject that no honest writer produces.
    const writer = await h.connect();
    await writeRaw(writer, svc.service.subjects.event("lock", "l"), new TextEncoder().encode("{not json"));
    const corrupt = await expectRejects(client.lock.get({ name: "l" }), CorruptError, "CORRUPT", 500);
    expect(corrupt.subject).toBe(`${svc.config.prefix}.v1.lock.get`);
    await expectRejects(client.lock.renew({ name: "l", owner: "alice", etag: lease.etag }), CorruptError, "CORRUPT", 500);
    expect(await client.lock.reset({ name: "l" })).toEqual({});
    expect((await client.lock.acquire({ name: "l", owner: "bob" })).lease.generation).toBe(2);
  });

  it("throws UnavailableError (retryable) when the service cannot use its event stream", async () => {
    const { client, svc, nc } = await h.start();
    await client.lock.acquire({ name: "before", owner: "alice" });
    await (await jetstreamManager(nc)).streams.delete(svc.service.subjects.eventStream);
    const error = await expectRejects(client.lock.acquire({ name: "after", owner: "alice" }), UnavailableError, "UNAVAILABLE", 503);
    expect(error.retryable).toBe(true);
    await expectRejects(client.host.list(), UnavailableError, "UNAVAILABLE", 503);
  });

  it("puts a fresh requestId on every mutation, and a repeated requestId is answered with the first reply", async () => {
    const { client, svc } = await h.start();
    const { lease } = await client.lock.acquire({ name: "auto", owner: "alice" });
    await client.lock.renew({ name: "auto", owner: "alice", etag: lease.etag });
    await client.lock.reset({ name: "auto" });
    const ids = (await lockEvents(svc.service, "auto")).map((e) => e.event.requestId);
    expect(ids).toHaveLength(3);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(ids).size).toBe(3);

    const first = await client.lock.acquire({ name: "given", owner: "alice", requestId: "acquire-given-1" });
    const again = await client.lock.acquire({ name: "given", owner: "alice", requestId: "acquire-given-1" });
    expect(again).toEqual(first);
    expect((await lockEvents(svc.service, "given")).map((e) => e.event.requestId)).toEqual(["acquire-given-1"]);
  });

  it("retries once after a timeout with the same requestId, and the service answers it from the first attempt", async () => {
    const { prefix, svc, nc } = await h.start();
    // The first reply is lost on the way back, after the service carried the command out.
    const relay = await h.relay(prefix, (n) => n > 1);
    const client = new LeaseholdClient(nc, { prefix: relay.prefix, timeoutMs: 400 });
    const { lease } = await client.lock.acquire({ name: "lossy", owner: "alice" });
    expect(lease).toMatchObject({ owner: "alice", generation: 1 });
    expect(relay.seen).toHaveLength(2);
    const [a, b] = relay.seen;
    expect(typeof a!.body.requestId).toBe("string");
    expect(b!.body).toEqual(a!.body);
    // One acquisition, not an acquisition and a LEASE_EXISTS.
    expect(await lockEvents(svc.service, "lossy")).toHaveLength(1);

    // Reads are retried too.
    relay.seen.length = 0;
    const readRelay = await h.relay(prefix, (n) => n === 2);
    const reader = new LeaseholdClient(nc, { prefix: readRelay.prefix, timeoutMs: 400 });
    expect((await reader.lock.get({ name: "lossy" })).lease?.etag).toBe(lease.etag);
    expect(readRelay.seen).toHaveLength(2);
  });

  it("does not retry a contract error, nor a mutation sent without a requestId", async () => {
    const { prefix, client } = await h.start();
    await client.lock.acquire({ name: "held", owner: "alice" });
    const relay = await h.relay(prefix, () => true);
    const nc = await h.connect();
    const viaRelay = new LeaseholdClient(nc, { prefix: relay.prefix, timeoutMs: 400 });
    await expectRejects(viaRelay.lock.acquire({ name: "held", owner: "bob" }), LeaseExistsError, "LEASE_EXISTS", 409);
    expect(relay.seen).toHaveLength(1);

    const silent = await h.relay(prefix, () => false, false);
    const lossy = new LeaseholdClient(nc, { prefix: silent.prefix, timeoutMs: 200 });
    const error = await lossy.lock.reset({ name: "held" }, { autoRequestId: false }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseholdTimeoutError);
    expect((error as LeaseholdTimeoutError).attempts).toBe(1);
    expect(silent.seen).toHaveLength(1);
    expect(silent.seen[0]!.body).toEqual({ name: "held" });
  });

  it("reports a request that got no answer as a transport error, never as a contract error", async () => {
    const { prefix } = await h.start();
    const silent = await h.relay(prefix, () => false, false);
    const client = await h.client(silent.prefix, { timeoutMs: 150 });
    const timeout = await client.lock.acquire({ name: "x", owner: "alice" }).catch((e: unknown) => e);
    expect(timeout).toBeInstanceOf(LeaseholdTimeoutError);
    expect(timeout).toBeInstanceOf(LeaseholdTransportError);
    expect(timeout).not.toBeInstanceOf(LeaseholdError);
    const t = timeout as LeaseholdTimeoutError;
    expect([t.attempts, t.timeoutMs, t.subject, t.noResponders]).toEqual([2, 150, `${silent.prefix}.v1.lock.acquire`, false]);
    expect(t.requestId).toBe(silent.seen[0]!.body.requestId);
    expect(silent.seen.map((s) => s.body.requestId)).toEqual([t.requestId, t.requestId]);

    // Nobody serves this prefix: answered by NATS (no responders), not by the request's deadline, which is set
    // past the test's own timeout so that waiting for it would fail the test.
    const nobody = await h.client(uniquePrefix(), { timeoutMs: 120_000 });
    const error = await nobody.lock.get({ name: "x" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseholdTransportError);
    expect(error).not.toBeInstanceOf(LeaseholdTimeoutError);
    expect((error as LeaseholdTransportError).noResponders).toBe(true);
  });
});
