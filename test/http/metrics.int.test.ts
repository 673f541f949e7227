/**
 * `/metrics`, `/healthz` and `/readyz` of a running instance, scraped over
 * HTTP and read with a Prometheus text parser: every series the contract
 * names is there and moves as commands run; `/readyz` is 503 while the fold
 * catches up with a long stream and 200 after, again after a restart.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { encodeEvent } from "../../src/events/envelope.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { call, startTestService, uniquePrefix, type TestService } from "../support/nats.ts";
import { ServiceMetrics } from "../../src/http/index.ts";
import { publishRaw } from "../tools/support/cli.ts";
import { publishCommand } from "../support/durable.ts";
import { startHttpFor, startHttpTestService, type HttpTestService } from "./support/http-service.ts";
import { scrape, status } from "./support/scrape.ts";

const running: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  for (const r of running.splice(0).reverse()) await r.stop();
});

async function service(prefix = uniquePrefix()): Promise<HttpTestService> {
  const s = await startHttpTestService(prefix);
  running.push(s);
  return s;
}

const CONTRACT_SERIES = [
  "leasehold_commands_total",
  "leasehold_command_duration_seconds",
  "leasehold_append_duration_seconds",
  "leasehold_append_conflicts_total",
  "leasehold_active_actors",
  "leasehold_live_leases",
  "leasehold_stream_last_seq",
  "leasehold_read_model_lag",
];

describe("/metrics", () => {
  it("exposes every contract series and the default process metrics, moving as commands run", async () => {
    const s = await service();
    const { nc } = s.test;
    const prefix = s.test.config.prefix;
    await vi.waitFor(async () => expect(await status(s.base, "/readyz")).toBe(200), { timeout: 10_000, interval: 50 });

    const before = await scrape(s.base);
    for (const name of CONTRACT_SERIES) expect(before.family(name).name).toBe(name);
    expect(before.family("leasehold_command_duration_seconds").type).toBe("HISTOGRAM");
    expect(before.family("leasehold_append_duration_seconds").type).toBe("HISTOGRAM");
    expect(before.family("leasehold_commands_total").type).toBe("COUNTER");
    for (const name of [
      "process_cpu_user_seconds_total",
      "process_resident_memory_bytes",
      "nodejs_heap_size_used_bytes",
      "nodejs_eventloop_lag_seconds",
    ]) {
      expect(before.families.has(name), name).toBe(true);
    }
    expect(before.value("leasehold_stream_last_seq")).toBe(0);
    expect(before.value("leasehold_live_leases", { kind: "lock" })).toBe(0);

    const acquired = await call<{ lease: { etag: string } }>(nc, prefix, "lock.acquire", { name: "db", owner: "a", ttlMs: 20_000 });
    expect(acquired.status).toBeUndefined();
    expect((await call(nc, prefix, "lock.acquire", { name: "db", owner: "b" })).code).toBe("LEASE_EXISTS");
    expect((await call(nc, prefix, "proxy.register", { proxy: "p1", maxLeases: 2 })).status).toBeUndefined();
    expect((await call(nc, prefix, "proxy.acquire", { ttlMs: 20_000 })).status).toBeUndefined();
    expect((await call(nc, prefix, "host.set", { host: "h1", healthy: true })).status).toBeUndefined();
    expect((await call(nc, prefix, "route.acquire", { route: "r", fp: "", model: "m", candidates: ["h1"] })).status).toBeUndefined();

    await vi.waitFor(
      async () => {
        const m = await scrape(s.base);
        expect(m.value("leasehold_commands_total", { kind: "lock", op: "acquire", outcome: "ok" })).toBe(1);
        expect(m.value("leasehold_commands_total", { kind: "lock", op: "acquire", outcome: "LEASE_EXISTS" })).toBe(1);
        expect(m.value("leasehold_commands_total", { kind: "proxy", op: "register", outcome: "ok" })).toBe(1);
        expect(m.value("leasehold_commands_total", { kind: "host", op: "set", outcome: "ok" })).toBe(1);
        expect(m.count("leasehold_command_duration_seconds", { kind: "lock", op: "acquire" })).toBe(2);
        expect(m.count("leasehold_append_duration_seconds")).toBeGreaterThanOrEqual(5);
        expect(m.value("leasehold_stream_last_seq")).toBeGreaterThanOrEqual(5);
        expect(m.value("leasehold_live_leases", { kind: "lock" })).toBe(1);
        expect(m.value("leasehold_live_leases", { kind: "proxy" })).toBe(1);
        expect(m.value("leasehold_live_leases", { kind: "route" })).toBe(1);
        // An actor is in memory only while it has commands: none once every command is answered.
        expect(m.value("leasehold_active_actors", { kind: "lock" })).toBe(0);
        expect(m.value("leasehold_active_actors", { kind: "proxy" })).toBe(0);
        expect(m.value("leasehold_read_model_lag", { kind: "lock" })).toBe(0);
      },
      { timeout: 5000, interval: 50 },
    );

    expect((await call(nc, prefix, "lock.release", { name: "db", etag: acquired.body.lease.etag })).status).toBeUndefined();
    await vi.waitFor(async () => expect((await scrape(s.base)).value("leasehold_live_leases", { kind: "lock" })).toBe(0), {
      timeout: 5000,
      interval: 50,
    });
  });

  it("counts durable commands in leasehold_commands_total as it counts requests, refusals included", async () => {
    const s = await service();
    const { nc } = s.test;
    const prefix = s.test.config.prefix;
    await publishCommand(nc, prefix, "lock.acquire", { requestId: "d-1", name: "durable", owner: "a", ttlMs: 20_000 });
    await publishCommand(nc, prefix, "lock.acquire", { requestId: "d-2", name: "durable", owner: "b" });
    await publishCommand(nc, prefix, "lock.reset", { name: "durable" }); // no requestId: refused as BAD_REQUEST
    await vi.waitFor(
      async () => {
        const m = await scrape(s.base);
        expect(m.value("leasehold_commands_total", { kind: "lock", op: "acquire", outcome: "ok" })).toBe(1);
        expect(m.value("leasehold_commands_total", { kind: "lock", op: "acquire", outcome: "LEASE_EXISTS" })).toBe(1);
        expect(m.value("leasehold_commands_total", { kind: "lock", op: "reset", outcome: "BAD_REQUEST" })).toBe(1);
        expect(m.count("leasehold_command_duration_seconds", { kind: "lock", op: "acquire" })).toBe(2);
      },
      { timeout: 10_000, interval: 50 },
    );
  });

  it("counts an append that lost the expected-sequence race to another instance", async () => {
    const s = await service();
    const other = await startTestService(s.test.config.prefix);
    running.push(other);
    // Both instances decide on the same last sequence at once, taking turns at going first:
    // the one that publishes second loses the race and catches up.
    const resetOn = (host: typeof other.service.runtime) => host.execute("lock", "raced", { op: "reset" });
    for (let i = 0; i < 20; i++) {
      const pair = i % 2 === 0 ? [s.test.service.runtime, other.service.runtime] : [other.service.runtime, s.test.service.runtime];
      const results = await Promise.all(pair.map(resetOn));
      expect(results.map((r) => r.ok)).toEqual([true, true]);
    }
    const m = await scrape(s.base);
    expect(m.value("leasehold_append_conflicts_total")).toBeGreaterThanOrEqual(1);
  });
});

describe("/healthz and /readyz", () => {
  it("answers /readyz 200 over a long stream from the instance's own states (no second fold), again after a restart; /healthz 200 throughout", async () => {
    const prefix = uniquePrefix();
    const subjects = new Subjects(prefix);
    const test: TestService = await startTestService(prefix);
    running.push(test);
    const at = new Date().toISOString();
    const events = 30_000;
    const last = await publishRaw(
      test.nc,
      prefix,
      (function* () {
        for (let i = 0; i < events; i++) {
          const id = `h${i % 500}`;
          yield {
            subject: subjects.event("host", id),
            payload: encodeEvent({ type: "HostStateSet", v: 1, at, kind: "host", id, data: { healthy: i % 2 === 0, draining: false } }),
          };
        }
      })(),
    );
    expect(last).toBe(events);

    for (let round = 0; round < 2; round++) {
      const http = await startHttpFor(test, new ServiceMetrics({ defaultMetrics: false }));
      try {
        expect(await status(http.url, "/healthz")).toBe(200);
        await vi.waitFor(async () => expect(await status(http.url, "/readyz")).toBe(200), { timeout: 30_000, interval: 20 });
        const m = await scrape(http.url);
        expect(m.value("leasehold_stream_last_seq")).toBe(events);
        expect(m.value("leasehold_read_model_lag", { kind: "host" })).toBe(0);
        // The page shows what the service folded: every host, from the projection the service keeps anyway.
        const view = http.feed.view();
        expect(view.seq).toBe(events);
        expect(view.totals.hosts).toBe(500);
        // The tail follower read the latest events only, and shows them newest first.
        expect(view.events.map((e) => e.seq)).toEqual(Array.from({ length: 50 }, (_, i) => events - i));
      } finally {
        await http.stop();
      }
    }
  });

  it("answers only GET and HEAD, and 404 elsewhere", async () => {
    const s = await service();
    expect((await fetch(`${s.base}/metrics`, { method: "POST" })).status).toBe(405);
    expect((await fetch(`${s.base}/readyz`, { method: "DELETE" })).status).toBe(405);
    expect((await fetch(`${s.base}/healthz`, { method: "HEAD" })).status).toBe(200);
    expect(await status(s.base, "/nope")).toBe(404);
  });
});
