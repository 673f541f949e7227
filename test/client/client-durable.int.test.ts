/**
 * client.durable against a real service: each mutation published to
 * `<prefix>.cmd.<kind>.<op>` returns once JetStream stored it, a repeated
 * requestId is stored once, the reply can be awaited (a refusal thrown as its
 * typed error) or sent elsewhere, and commands wait while no service runs.
 */
import { describe, expect, it, vi } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import {
  LeaseExistsError,
  LeaseholdClient,
  LeaseholdTimeoutError,
  LeaseholdTransportError,
  UnknownHostError,
  NoSessionError,
  type DurableAck,
} from "../../src/index.ts";
import { collect, createCommandStream, eventsOfKind } from "../support/durable.ts";
import { startTestService, uniquePrefix } from "../support/nats.ts";
import { expectRejects, useClientHarness } from "./harness.ts";

const h = useClientHarness();

describe("client.durable", () => {
  it("returns once JetStream stored the command, stores a repeated requestId once, and the service carries it out once", async () => {
    const { client, nc, prefix } = await h.start();
    const ack = await client.durable.host.set({ host: "h1", healthy: true, requestId: "set-h1" });
    expect(ack).toMatchObject({ requestId: "set-h1", stream: `${prefix.toUpperCase()}_COMMANDS`, duplicate: false });
    expect(ack.seq).toBeGreaterThan(0);
    const again = await client.durable.host.set({ host: "h1", healthy: true, requestId: "set-h1" });
    expect(again).toEqual({ ...ack, duplicate: true });

    const generated = await client.durable.host.set({ host: "h2", healthy: true, draining: true });
    expect(generated.requestId).toMatch(/^[0-9a-f-]{36}$/);
    await vi.waitFor(async () => expect((await client.host.list()).hosts.map((x) => x.host)).toEqual(["h1", "h2"]), {
      timeout: 5000,
      interval: 20,
    });
    const events = await eventsOfKind(nc, prefix, "host");
    expect(events.map((e) => [e.id, e.requestId])).toEqual([
      ["h1", "set-h1"],
      ["h2", generated.requestId],
    ]);
  });

  it("awaits the reply of every durable mutation, and throws a refusal as its typed error", async () => {
    const { client } = await h.start();
    const d = client.durable;
    const reply = { awaitReply: true } as const;

    const { lease } = (await d.lock.acquire({ name: "L", owner: "alice", ttlMs: 10_000 }, reply)).reply;
    expect(lease).toMatchObject({ name: "L", owner: "alice", generation: 1, ttlMs: 10_000 });
    await expectRejects(d.lock.acquire({ name: "L", owner: "bob" }, reply), LeaseExistsError, "LEASE_EXISTS", 409);
    const renewed = (await d.lock.renew({ name: "L", owner: "alice", etag: lease.etag }, reply)).reply.lease;
    expect(renewed).toMatchObject({ generation: 1, ttlMs: 10_000 });
    expect((await d.lock.release({ name: "L", etag: renewed.etag }, reply)).reply).toEqual({});
    expect((await d.lock.reset({ name: "L" }, reply)).reply).toEqual({});

    expect((await d.proxy.register({ proxy: "p1", maxLeases: 2 }, reply)).reply).toEqual({ proxy: "p1" });
    const acquired = (await d.proxy.acquire({ ttlMs: 30_000, target: "t" }, reply)).reply;
    expect(acquired).toMatchObject({ lease: { proxy: "p1", target: "t" }, stats: { considered: 1 } });
    expect((await d.proxy.report({ leaseId: acquired.lease.id, result: "rate_limited" }, reply)).reply.cooldownUntilAt).toEqual(
      expect.any(String),
    );
    expect((await d.proxy.release({ leaseId: acquired.lease.id }, reply)).reply).toEqual({});
    expect((await d.proxy.remove({ proxy: "p1" }, reply)).reply).toEqual({ proxy: "p1" });

    expect((await d.host.set({ host: "h1", healthy: true }, reply)).reply).toEqual({ host: "h1" });
    expect((await d.route.acquire({ route: "r", fp: "", model: "m", candidates: ["h1"] }, reply)).reply).toEqual({
      host: "h1",
      reused: false,
    });
    expect((await d.route.move({ route: "r", fp: "x", model: "m", host: "h1" }, reply)).reply).toEqual({ from: "", host: "h1" });
    expect((await d.route.candidates({ route: "r", hosts: ["h2"] }, reply)).reply).toEqual({});
    // Pinned where its leases are, so none is displaced.
    expect((await d.route.pin({ route: "r", host: "h1" }, reply)).reply).toEqual({});
    await expectRejects(d.route.pin({ route: "r", host: "h9" }, reply), UnknownHostError, "UNKNOWN_HOST", 404);
    expect((await d.route.unpin({ route: "r" }, reply)).reply).toEqual({});
    expect((await d.route.release({ route: "r" }, reply)).reply).toEqual({ released: 2 });
    // What the durable path did is what a request sees.
    expect(await client.route.get({ route: "r" })).toEqual({ pinned: "", leases: [] });
    expect(await client.proxy.list()).toEqual({ proxies: [] });
  });

  it("carries out the session ops durably, and a lock taken under the session", async () => {
    const { client } = await h.start();
    const d = client.durable;
    const reply = { awaitReply: true } as const;
    const { session } = (await d.session.open({ owner: "alice", ttlMs: 10_000 }, reply)).reply;
    expect([session.owner, session.ttlMs]).toEqual(["alice", 10_000]);
    const { lease } = (await d.lock.acquire({ name: "L", owner: "alice", session: session.id }, reply)).reply;
    expect([lease.session, lease.ttlMs]).toEqual([session.id, 10_000]);
    expect((await d.session.keepalive({ id: session.id }, reply)).reply.session.id).toBe(session.id);
    expect((await d.session.get({ id: session.id }, reply)).reply).toMatchObject({ session: { id: session.id }, locks: ["L"] });
    expect((await d.session.close({ id: session.id }, reply)).reply).toEqual({});
    await expectRejects(d.session.close({ id: session.id }, reply), NoSessionError, "NO_SESSION", 404);
    expect(await client.lock.get({ name: "L" })).toMatchObject({ lease: null });
  });

  it("keeps commands while no service runs; the reply goes to replyTo once one starts", async () => {
    const prefix = uniquePrefix();
    const nc = await h.connect();
    const client = new LeaseholdClient(nc, { prefix });
    // No service has ever created the command stream: the publish is not stored, and says so.
    const lost = await client.durable.host.set({ host: "h1", healthy: true }).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(LeaseholdTransportError);
    expect((lost as Error).message).toMatch(/no stream/);

    await createCommandStream(nc, prefix);
    // Stored, but nobody answers yet: waiting for the reply times out, the command stays.
    const unanswered = await client.durable.host
      .set({ host: "h0", healthy: true }, { awaitReply: true, replyTimeoutMs: 200 })
      .catch((e: unknown) => e);
    expect(unanswered).toBeInstanceOf(LeaseholdTimeoutError);
    const replies = collect(nc, `replies.${prefix}`);
    h.defer(() => replies.stop());
    const acks: DurableAck[] = [];
    for (const host of ["h1", "h2", "h3"])
      acks.push(await client.durable.host.set({ host, healthy: true }, { replyTo: `replies.${prefix}` }));
    expect(acks.map((a) => a.seq)).toEqual([2, 3, 4]);
    const jsm = await jetstreamManager(nc);
    expect((await jsm.streams.info(`${prefix.toUpperCase()}_COMMANDS`)).state.messages).toBe(4);

    const svc = await startTestService(prefix);
    h.defer(() => svc.stop());
    await vi.waitFor(() => expect(replies.messages).toHaveLength(3), { timeout: 10_000, interval: 20 });
    expect(replies.messages.map((m) => m.json<{ host: string }>().host).sort()).toEqual(["h1", "h2", "h3"]);
    expect((await client.host.list()).hosts.map((x) => x.host)).toEqual(["h0", "h1", "h2", "h3"]);
  });
});
