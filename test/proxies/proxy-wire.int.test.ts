/**
 * The proxy endpoints on the wire (real nats-server): success bodies, the
 * contract's error shape for every proxy error code, the events each command
 * leaves in the stream (envelope and data), real-time expiry, and the
 * service framework listing the proxy endpoints.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/actors/clock.ts";
import { uniquePrefix } from "../support/nats.ts";
import { expectFailure, expectOk, proxyClient, proxyEvents, useProxyIntHarness } from "../support/proxy-fixtures.ts";

const h = useProxyIntHarness();

describe("proxy endpoints over NATS", () => {
  it("answer every operation with the contract's bodies and record the contract's events", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix, { cooldownMs: 60_000 });
    const proxies = proxyClient(await h.connect(), prefix);

    expect(
      expectOk(
        await proxies.call("register", { proxy: "eu.1", maxLeases: 2, latencyMs: 12, labels: { region: "eu" }, requestId: "reg-1" }),
      ),
    ).toEqual({
      proxy: "eu.1",
    });
    expect(expectOk(await proxies.call("register", { proxy: "us 1", maxLeases: 1 }))).toEqual({ proxy: "us 1" });

    const before = Date.now();
    const acquired = expectOk(await proxies.call("acquire", { ttlMs: 30_000, target: "shop.example", labels: { region: "eu" } }));
    expect(acquired.lease).toMatchObject({ proxy: "eu.1", target: "shop.example" });
    expect(acquired.stats).toEqual({ considered: 1, unhealthy: 0, inCooldown: 0, atCapacity: 0 });
    const expiresAt = Date.parse(acquired.lease!.expiresAt);
    expect(acquired.lease!.expiresAt).toBe(new Date(expiresAt).toISOString());
    expect(expiresAt).toBeGreaterThanOrEqual(before + 30_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 30_000);
    // Unguessable: at least 128 bits of base64url.
    expect(acquired.lease!.id).toMatch(/^[A-Za-z0-9_-]{22,}$/);

    const beforeReport = Date.now();
    const reported = expectOk(await proxies.call("report", { leaseId: acquired.lease!.id, result: "rate_limited" }));
    expect(Date.parse(reported.cooldownUntilAt!)).toBeGreaterThanOrEqual(beforeReport + 60_000);
    expect(Date.parse(reported.cooldownUntilAt!)).toBeLessThanOrEqual(Date.now() + 60_000);
    expect(expectOk(await proxies.call("report", { leaseId: acquired.lease!.id, result: "ok" }))).toEqual({});

    const list = expectOk(await proxies.call("list", {}));
    expect(list.proxies).toEqual([
      {
        proxy: "eu.1",
        maxLeases: 2,
        latencyMs: 12,
        labels: { region: "eu" },
        healthy: true,
        active: 1,
        cooldowns: [{ target: "shop.example", untilAt: reported.cooldownUntilAt, streak: 1 }],
      },
      { proxy: "us 1", maxLeases: 1, latencyMs: 0, labels: {}, healthy: true, active: 0, cooldowns: [] },
    ]);
    expect(expectOk(await proxies.call("counts", {}))).toEqual({ counts: { "eu.1": 1 } });
    expect(expectOk(await proxies.call("release", { leaseId: acquired.lease!.id }))).toEqual({});
    expect(expectOk(await proxies.call("release", { leaseId: acquired.lease!.id }))).toEqual({});
    expect(expectOk(await proxies.call("remove", { proxy: "us 1" }))).toEqual({ proxy: "us 1" });

    const events = await proxyEvents(svc.service.log, svc.service.subjects);
    expect(events.map((e) => [e.event.type, e.event.id])).toEqual([
      ["ProxyRegistered", "eu.1"],
      ["ProxyRegistered", "us 1"],
      ["ProxyLeaseGranted", "eu.1"],
      ["ProxyCooldownStarted", "eu.1"],
      ["ProxyLeaseReleased", "eu.1"],
      ["ProxyRemoved", "us 1"],
    ]);
    for (const { event } of events) {
      expect(event).toMatchObject({ v: 1, kind: "proxy" });
      expect(event.at).toBe(new Date(Date.parse(event.at)).toISOString());
    }
    expect(events[0]!.event.requestId).toBe("reg-1");
    expect(events[1]!.event.requestId).toBeUndefined();
    expect(events.map((e) => e.event.data)).toEqual([
      { maxLeases: 2, latencyMs: 12, labels: { region: "eu" }, healthy: true },
      { maxLeases: 1, latencyMs: 0, labels: {}, healthy: true },
      {
        leaseId: acquired.lease!.id,
        target: "shop.example",
        ttlMs: 30_000,
        expiresAt: acquired.lease!.expiresAt,
        stats: acquired.stats,
      },
      {
        leaseId: acquired.lease!.id,
        result: "rate_limited",
        target: "shop.example",
        untilAt: reported.cooldownUntilAt,
        cooldownMs: expect.any(Number),
        streak: 1,
      },
      { leaseId: acquired.lease!.id },
      {},
    ]);
    // Each actor writes its own subject: <prefix>.events.proxy.<token>.
    const subjects = [];
    for await (const m of svc.service.log.readStream({ filter: `${prefix}.events.proxy.>` })) subjects.push(m.subject);
    expect(new Set(subjects)).toEqual(new Set([svc.service.subjects.event("proxy", "eu.1"), svc.service.subjects.event("proxy", "us 1")]));
  });

  it("answer failures with the status header, Nats-Service-Error = error.message, and the details", async () => {
    const prefix = uniquePrefix();
    await h.service(prefix);
    const proxies = proxyClient(await h.connect(), prefix);
    expectFailure(await proxies.call("register", { proxy: "p" }), 400, "BAD_REQUEST");
    expectFailure(await proxies.call("acquire", "{nope"), 400, "BAD_REQUEST");
    expectFailure(await proxies.call("report", { leaseId: "x", result: "great" }), 400, "BAD_REQUEST");
    expectFailure(await proxies.call("remove", { proxy: "p" }), 404, "UNKNOWN_PROXY", { proxies: ["p"] });
    expectFailure(await proxies.call("acquire", { ttlMs: 1000, candidates: ["p", "q"] }), 404, "UNKNOWN_PROXY", { proxies: ["p", "q"] });
    expectFailure(await proxies.call("report", { leaseId: "x", result: "ok" }), 404, "UNKNOWN_LEASE");
    expectOk(await proxies.call("register", { proxy: "p", maxLeases: 0 }));
    expectFailure(await proxies.call("acquire", { ttlMs: 1000 }), 409, "NO_MATCH", {
      stats: { considered: 1, unhealthy: 0, inCooldown: 0, atCapacity: 1 },
    });
  });

  it("let a short lease expire on the server's clock", async () => {
    const prefix = uniquePrefix();
    await h.service(prefix);
    const proxies = proxyClient(await h.connect(), prefix);
    expectOk(await proxies.call("register", { proxy: "p", maxLeases: 1 }));
    const lease = expectOk(await proxies.call("acquire", { ttlMs: 200 })).lease!;
    expect(expectOk(await proxies.call("counts", {})).counts).toEqual({ p: 1 });
    await expect.poll(async () => expectOk(await proxies.call("counts", {})).counts, { timeout: 5000, interval: 50 }).toEqual({});
    // Expired, not released: the slot is free again and the lease still answers report.
    expect(expectOk(await proxies.call("acquire", { ttlMs: 60_000 })).lease!.proxy).toBe("p");
    expect(expectOk(await proxies.call("report", { leaseId: lease.id, result: "ok" }))).toEqual({});
  });

  it("keep an expired lease answering report for cooldownMs, with the periodic sweep running", async () => {
    const prefix = uniquePrefix();
    // The service's clock is the test's: the retention window is asserted at instants chosen inside and past it, however slow the machine.
    const clock = new ManualClock(Date.parse("2026-03-01T12:00:00.000Z"));
    await h.service(prefix, { cooldownMs: 1500, sweepIntervalMs: 50 }, clock);
    const proxies = proxyClient(await h.connect(), prefix);
    expectOk(await proxies.call("register", { proxy: "p", maxLeases: 1 }));
    const lease = expectOk(await proxies.call("acquire", { ttlMs: 100 })).lease!;
    const expiresAt = Date.parse(lease.expiresAt);
    expect(expiresAt).toBe(clock.now() + 100);
    expect(expectOk(await proxies.call("counts", {})).counts).toEqual({ p: 1 });
    clock.set(expiresAt);
    expect(expectOk(await proxies.call("counts", {})).counts).toEqual({});
    // Expired, not released: until cooldownMs after its expiry (inclusive) it still takes a report.
    clock.set(expiresAt + 1500);
    const reported = expectOk(await proxies.call("report", { leaseId: lease.id, result: "rate_limited" }));
    expect(reported.cooldownUntilAt).toBe(new Date(expiresAt + 3000).toISOString());
    // One millisecond later it is forgotten, whether or not the sweep has pruned it yet.
    clock.set(expiresAt + 1501);
    expectFailure(await proxies.call("report", { leaseId: lease.id, result: "ok" }), 404, "UNKNOWN_LEASE");
    expect(expectOk(await proxies.call("list", {})).proxies![0]!.cooldowns).toEqual([
      { target: "", untilAt: reported.cooldownUntilAt, streak: 1 },
    ]);
    // The cooldown ends at its untilAt; the sweep prunes what the clock has passed, and the answers stay the same.
    clock.set(expiresAt + 3000);
    expect(expectOk(await proxies.call("list", {})).proxies![0]!.cooldowns).toEqual([]);
    clock.set(expiresAt + 3000 + 1500);
    await expect
      .poll(async () => expectOk(await proxies.call("list", {})).proxies![0]!.cooldowns, { timeout: 5000, interval: 50 })
      .toEqual([]);
    expectFailure(await proxies.call("report", { leaseId: lease.id, result: "ok" }), 404, "UNKNOWN_LEASE");
  });

  it("are listed by the service framework", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const nc = await h.connect();
    const info = (await nc.request(`$SRV.INFO.leasehold.${svc.service.micro.id}`, undefined, { timeout: 5000 })).json<{
      endpoints: { name: string; subject: string }[];
    }>();
    const ops = ["register", "remove", "acquire", "release", "report", "list", "counts"];
    for (const op of ops)
      expect(info.endpoints).toContainEqual(expect.objectContaining({ name: `proxy_${op}`, subject: `${prefix}.v1.proxy.${op}` }));
  });
});
