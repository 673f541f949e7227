import { afterEach, describe, expect, it, vi } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { Subjects } from "../../src/contract/subjects.ts";
import { collect, createCommandStream, eventsOfKind, publishCommand, spawnServe, type ServeProcess } from "../support/durable.ts";
import { call, connectNats, natsUrl, quietLogger, startTestService, uniquePrefix, type TestService } from "../support/nats.ts";
import { resolveConfig } from "../../src/config.ts";
import { startService } from "../../src/service/start-service.ts";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function client(): Promise<NatsConnection> {
  const nc = await connectNats();
  cleanups.push(() => nc.drain());
  return nc;
}
async function service(prefix: string): Promise<TestService> {
  const s = await startTestService(prefix);
  cleanups.push(() => s.stop());
  return s;
}
function serveProcess(prefix: string): ServeProcess {
  // A short ack wait so the killed instance's unacknowledged commands come back quickly.
  const p = spawnServe(natsUrl(), prefix, ["--log-level", "warn", "--command-ack-wait-ms", "1500"]);
  cleanups.push(async () => {
    if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill("SIGKILL");
    await p.exited;
  });
  return p;
}
/** A service instance whose connection counts the replies it publishes to `replies.<prefix>` (which instance answered). */
async function repliesCounted(prefix: string): Promise<TestService & { replies(): number }> {
  const nc = await connectNats();
  let count = 0;
  const publish = nc.publish.bind(nc);
  nc.publish = (subject, ...rest) => {
    if (subject === `replies.${prefix}`) count++;
    publish(subject, ...rest);
  };
  const config = resolveConfig({ prefix, nats: natsUrl() });
  const running = await startService({ nc, config, logger: quietLogger });
  const s = {
    service: running,
    nc,
    config,
    stop: async () => {
      await running.stop();
      await nc.drain();
    },
    replies: () => count,
  };
  cleanups.push(() => s.stop());
  return s;
}
const namesOf = (replies: { string(): string }[]) =>
  replies.map((m) => (JSON.parse(m.string()) as { lease?: { name: string } }).lease?.name).filter((n): n is string => n !== undefined);

describe("durable commands", () => {
  it("keeps commands published while no service runs and carries each out once when one starts", async () => {
    const prefix = uniquePrefix();
    const nc = await client();
    await createCommandStream(nc, prefix);
    const replies = collect(nc, `replies.${prefix}`);
    for (let i = 0; i < 20; i++) {
      await publishCommand(
        nc,
        prefix,
        "lock.acquire",
        { requestId: `r${i}`, name: `n${i}`, owner: "o", ttlMs: 30000 },
        `replies.${prefix}`,
      );
    }
    // A duplicate publish (same Nats-Msg-Id) is dropped by JetStream.
    await publishCommand(nc, prefix, "lock.acquire", { requestId: "r0", name: "n0", owner: "o", ttlMs: 30000 }, `replies.${prefix}`);
    await service(prefix);
    await vi.waitFor(() => expect(replies.messages.length).toBe(20), { timeout: 10_000, interval: 20 });
    expect(new Set(namesOf(replies.messages)).size).toBe(20);
    const events = await eventsOfKind(nc, prefix, "lock");
    expect(events.map((e) => e.requestId).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `r${i}`).sort());
  });

  it("acknowledges an invalid command, reports it on the error subject, and does not redeliver it", async () => {
    const prefix = uniquePrefix();
    const nc = await client();
    const s = await service(prefix);
    const errors = collect(nc, `${prefix}.cmd-errors.>`);
    const replies = collect(nc, `replies.${prefix}`);
    await publishCommand(nc, prefix, "lock.acquire", { name: "x", owner: "o" }, `replies.${prefix}`); // no requestId
    await publishCommand(nc, prefix, "lock.acquire", { requestId: "bad-ttl", name: "x", owner: "o", ttlMs: -5 });
    await publishCommand(nc, prefix, "lock.fly", { requestId: "bad-op", name: "x" });
    await vi.waitFor(() => expect(errors.messages.length).toBe(3), { timeout: 10_000, interval: 20 });
    expect(errors.messages.map((m) => m.subject).sort()).toEqual([
      `${prefix}.cmd-errors.lock.acquire`,
      `${prefix}.cmd-errors.lock.acquire`,
      `${prefix}.cmd-errors.lock.fly`,
    ]);
    for (const m of errors.messages) {
      expect(m.headers?.get("Nats-Service-Error-Code")).toBe("400");
      expect((JSON.parse(m.string()) as { error: { code: string } }).error.code).toBe("BAD_REQUEST");
    }
    expect(replies.messages).toHaveLength(1);
    // Acknowledged: nothing pending or awaiting ack, so it will never come back.
    await vi.waitFor(async () => expect(await s.service.commands.lag()).toMatchObject({ pending: 0, unacknowledged: 0 }), {
      timeout: 5000,
    });
    expect(await eventsOfKind(nc, prefix, "lock")).toHaveLength(0);
  });

  it("survives kill -9 in the middle of 1,000 commands: one event per command, every reply at least once", async () => {
    const prefix = uniquePrefix();
    const nc = await client();
    await createCommandStream(nc, prefix);
    const replies = collect(nc, `replies.${prefix}`);
    const total = 1000;
    for (let i = 0; i < total; i++) {
      await publishCommand(
        nc,
        prefix,
        "lock.acquire",
        { requestId: `k${i}`, name: `lock-${i}`, owner: `w${i % 7}`, ttlMs: 30000 },
        `replies.${prefix}`,
      );
    }
    const jsm = await jetstreamManager(nc);
    const commandStream = new Subjects(prefix).commandStream;
    // Kill instances until one dies with a command between its event's append and its acknowledgement
    // (its event is in the stream, the command still in the work queue): the case the test is about.
    const caughtMidCommand: number[] = [];
    for (let round = 1; round <= 5 && caughtMidCommand.length === 0; round++) {
      const instance = serveProcess(prefix);
      const target = Math.min(total - 50, round * 150);
      await vi.waitFor(() => expect(new Set(namesOf(replies.messages)).size).toBeGreaterThanOrEqual(target), {
        timeout: 20_000,
        interval: 5,
      });
      instance.child.kill("SIGKILL");
      await instance.exited;
      const appended = (await eventsOfKind(nc, prefix, "lock")).length;
      const acknowledged = total - (await jsm.streams.info(commandStream)).state.messages;
      expect(appended).toBeGreaterThanOrEqual(acknowledged);
      expect(acknowledged).toBeLessThan(total); // the kill really landed mid-batch
      if (appended > acknowledged) caughtMidCommand.push(appended - acknowledged);
    }
    expect(caughtMidCommand).toHaveLength(1);

    serveProcess(prefix);
    await vi.waitFor(() => expect(new Set(namesOf(replies.messages)).size).toBe(total), { timeout: 60_000, interval: 50 });
    const events = await eventsOfKind(nc, prefix, "lock");
    const perRequest = new Map<string, number>();
    for (const e of events) perRequest.set(e.requestId!, (perRequest.get(e.requestId!) ?? 0) + 1);
    expect(perRequest.size).toBe(total);
    expect([...perRequest.values()].every((n) => n === 1)).toBe(true);
    // Every reply is a success for the right lock at generation 1 (a redelivery answers as the first turn did).
    for (const m of replies.messages) expect((JSON.parse(m.string()) as { lease: { generation: number } }).lease.generation).toBe(1);
  });

  it("two instances draining one backlog never apply a command twice, and both take part", async () => {
    const prefix = uniquePrefix();
    const nc = await client();
    await createCommandStream(nc, prefix);
    const replies = collect(nc, `replies.${prefix}`);
    // Both instances wait on the command stream before the backlog is published in one burst,
    // so neither can drain it alone before the other has subscribed.
    const a = await repliesCounted(prefix);
    const b = await repliesCounted(prefix);
    // Reset commands on a few shared locks: double-applying would add events.
    const total = 300;
    await Promise.all(
      Array.from({ length: total }, (_, i) =>
        publishCommand(nc, prefix, "lock.reset", { requestId: `c${i}`, name: `shared-${i % 5}` }, `replies.${prefix}`),
      ),
    );
    await vi.waitFor(() => expect(replies.messages.length).toBeGreaterThanOrEqual(total), { timeout: 30_000, interval: 20 });
    const events = await eventsOfKind(nc, prefix, "lock");
    expect(events).toHaveLength(total);
    expect(new Set(events.map((e) => e.requestId)).size).toBe(total);
    const stats = await Promise.all([a, b].map((s) => s.service.commands.lag()));
    expect(stats.every((l) => l.pending === 0)).toBe(true);
    // Both instances answered commands, and between them every one.
    expect(a.replies()).toBeGreaterThan(0);
    expect(b.replies()).toBeGreaterThan(0);
    expect(a.replies() + b.replies()).toBe(replies.messages.length);
  });

  // One table, run through both paths: each step may use earlier replies (a lease id).
  type Step = [kindOp: string, body: (replies: Record<string, unknown>[]) => Record<string, unknown>];
  const table: Step[] = [
    ["lock.acquire", () => ({ name: "L", owner: "alice", ttlMs: 20000 })],
    ["lock.renew", (r) => ({ name: "L", owner: "alice", etag: (r[0] as { lease: { etag: string } }).lease.etag })],
    ["lock.release", (r) => ({ name: "L", etag: (r[1] as { lease: { etag: string } }).lease.etag })],
    ["lock.acquire", () => ({ name: "L", owner: "bob", ttlMs: 10000 })],
    ["lock.reset", () => ({ name: "L" })],
    ["proxy.register", () => ({ proxy: "p1", maxLeases: 2, latencyMs: 5, labels: { region: "eu" } })],
    ["proxy.register", () => ({ proxy: "p2", maxLeases: 1, latencyMs: 1 })],
    ["proxy.acquire", () => ({ ttlMs: 60000, target: "shop" })],
    ["proxy.report", (r) => ({ leaseId: (r[7] as { lease: { id: string } }).lease.id, result: "banned" })],
    ["proxy.acquire", () => ({ ttlMs: 60000, target: "shop" })],
    ["proxy.release", (r) => ({ leaseId: (r[9] as { lease: { id: string } }).lease.id })],
    ["proxy.remove", () => ({ proxy: "p2" })],
    ["host.set", () => ({ host: "h1", healthy: true })],
    ["host.set", () => ({ host: "h2", healthy: true, draining: true })],
    ["route.acquire", () => ({ route: "r", fp: "", model: "m", candidates: ["h1", "h2"] })],
    ["route.acquire", () => ({ route: "r", fp: "c1", model: "m", candidates: ["h2"] })],
    ["route.candidates", () => ({ route: "r", hosts: ["h3"] })],
    ["route.pin", () => ({ route: "r", host: "h2" })],
    ["route.unpin", () => ({ route: "r" })],
    ["route.move", () => ({ route: "r", fp: "c1", model: "m", host: "h1" })],
    ["route.release", () => ({ route: "r" })],
    ["host.set", () => ({ host: "h1", healthy: false })],
  ];

  /** Events with instants and random lease ids replaced by stable placeholders. */
  function normalise(events: { type: string; kind: string; id: string; requestId?: string; data: unknown }[]): unknown[] {
    const aliases = new Map<string, string>();
    const walk = (v: unknown, key = ""): unknown => {
      if (typeof v === "string" && /^\d{4}-\d\d-\d\dT/.test(v)) return "<instant>";
      if (typeof v === "string" && key === "leaseId") {
        if (!aliases.has(v)) aliases.set(v, `lease-${aliases.size + 1}`);
        return aliases.get(v);
      }
      if (Array.isArray(v)) return v.map((x) => walk(x));
      if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x, k)]));
      return v;
    };
    return events.map((e) => ({ type: e.type, kind: e.kind, id: e.id, requestId: e.requestId, data: walk(e.data) }));
  }

  it("gives the same events for locks, proxies, hosts and routes through a request and through a durable command", async () => {
    const viaRequest = uniquePrefix();
    const viaCommand = uniquePrefix();
    const nc = await client();
    const r = await service(viaRequest);
    const requestReplies: Record<string, unknown>[] = [];
    for (const [i, [kindOp, body]] of table.entries()) {
      const reply = await call(r.nc, viaRequest, kindOp, { ...body(requestReplies), requestId: `q${i}` });
      expect(reply.status, `${kindOp} via request`).toBeUndefined();
      requestReplies.push(reply.body);
    }
    await service(viaCommand);
    const replies = collect(nc, `replies.${viaCommand}`);
    const commandReplies: Record<string, unknown>[] = [];
    for (const [i, [kindOp, body]] of table.entries()) {
      await publishCommand(nc, viaCommand, kindOp, { ...body(commandReplies), requestId: `q${i}` }, `replies.${viaCommand}`);
      await vi.waitFor(() => expect(replies.messages.length).toBe(i + 1), { timeout: 10_000, interval: 5 });
      const m = replies.messages[i]!;
      expect(m.headers?.get("Nats-Service-Error-Code") || undefined, `${kindOp} via durable command: ${m.string()}`).toBeUndefined();
      commandReplies.push(JSON.parse(m.string()) as Record<string, unknown>);
    }
    for (const kind of ["lock", "proxy", "host", "route"]) {
      const a = normalise(await eventsOfKind(nc, viaRequest, kind));
      const b = normalise(await eventsOfKind(nc, viaCommand, kind));
      expect(a.length, `${kind} events`).toBeGreaterThan(0);
      expect(b, `${kind} events`).toEqual(a);
    }
  });
});
