/**
 * client.proxy against a real service: every method's typed reply, the proxy
 * refusals as their own error classes with details, and the lease helper
 * (acquire, hand out, report, release in one call).
 */
import { describe, expect, it } from "vitest";
import { NoMatchError, UnknownLeaseError, UnknownProxyError, type ProxyLeaseHandle } from "../../src/index.ts";
import { expectRejects, useClientHarness } from "./harness.ts";

const h = useClientHarness();

describe("client.proxy", () => {
  it("register, list, acquire, counts, report, release and remove answer the contract's typed replies", async () => {
    const { client } = await h.start({ cooldownMs: 60_000 });
    expect(await client.proxy.register({ proxy: "p-eu", maxLeases: 2, latencyMs: 40, labels: { region: "eu" } })).toEqual({
      proxy: "p-eu",
    });
    expect(await client.proxy.register({ proxy: "p-us", maxLeases: 1, latencyMs: 10 })).toEqual({ proxy: "p-us" });
    expect(await client.proxy.list()).toEqual({
      proxies: [
        { proxy: "p-eu", maxLeases: 2, latencyMs: 40, labels: { region: "eu" }, healthy: true, active: 0, cooldowns: [] },
        { proxy: "p-us", maxLeases: 1, latencyMs: 10, labels: {}, healthy: true, active: 0, cooldowns: [] },
      ],
    });

    // Both idle: the lower latency wins.
    const before = Date.now();
    const first = await client.proxy.acquire({ ttlMs: 30_000, target: "shop.example" });
    expect(first.lease).toMatchObject({ proxy: "p-us", target: "shop.example" });
    expect(Date.parse(first.lease.expiresAt)).toBeGreaterThanOrEqual(before + 30_000);
    expect(first.stats).toEqual({ considered: 2, unhealthy: 0, inCooldown: 0, atCapacity: 0 });
    // Labels narrow the candidates.
    const second = await client.proxy.acquire({ ttlMs: 30_000, labels: { region: "eu" } });
    expect(second.lease).toMatchObject({ proxy: "p-eu", target: "" });
    expect(second.stats).toEqual({ considered: 1, unhealthy: 0, inCooldown: 0, atCapacity: 0 });
    expect(await client.proxy.counts()).toEqual({ counts: { "p-eu": 1, "p-us": 1 } });

    expect(await client.proxy.report({ leaseId: first.lease.id, result: "ok" })).toEqual({});
    const banned = await client.proxy.report({ leaseId: first.lease.id, result: "banned" });
    expect(Date.parse(banned.cooldownUntilAt!)).toBeGreaterThanOrEqual(before + 60_000);
    expect(await client.proxy.release({ leaseId: first.lease.id })).toEqual({});
    expect(await client.proxy.release({ leaseId: "never-granted" })).toEqual({});
    expect(await client.proxy.counts()).toEqual({ counts: { "p-eu": 1 } });
    const us = (await client.proxy.list()).proxies.find((p) => p.proxy === "p-us");
    expect(us).toMatchObject({ active: 0, cooldowns: [{ target: "shop.example", untilAt: banned.cooldownUntilAt }] });

    expect(await client.proxy.remove({ proxy: "p-eu" })).toEqual({ proxy: "p-eu" });
    expect((await client.proxy.list()).proxies.map((p) => p.proxy)).toEqual(["p-us"]);
    expect(await client.proxy.counts()).toEqual({ counts: {} });
  });

  it("throws UnknownProxyError, UnknownLeaseError and NoMatchError with their details", async () => {
    const { client } = await h.start();
    await client.proxy.register({ proxy: "full", maxLeases: 0 });
    await client.proxy.register({ proxy: "sick", maxLeases: 5, healthy: false });

    const unknown = await expectRejects(
      client.proxy.acquire({ ttlMs: 1000, candidates: ["full", "ghost", "wraith"] }),
      UnknownProxyError,
      "UNKNOWN_PROXY",
      404,
    );
    expect(unknown.proxies).toEqual(["ghost", "wraith"]);
    const removed = await expectRejects(client.proxy.remove({ proxy: "ghost" }), UnknownProxyError, "UNKNOWN_PROXY", 404);
    expect(removed.proxies).toEqual(["ghost"]);

    await expectRejects(client.proxy.report({ leaseId: "no-such-lease", result: "banned" }), UnknownLeaseError, "UNKNOWN_LEASE", 404);

    const none = await expectRejects(client.proxy.acquire({ ttlMs: 1000 }), NoMatchError, "NO_MATCH", 409);
    expect(none.stats).toEqual({ considered: 2, unhealthy: 1, inCooldown: 0, atCapacity: 1 });
  });

  it("withLease hands out the proxy, reports a ban on the lease's target and releases", async () => {
    const { client } = await h.start();
    await client.proxy.register({ proxy: "p1", maxLeases: 1 });
    let seen: ProxyLeaseHandle | undefined;
    const value = await client.proxy.withLease({ ttlMs: 30_000, target: "shop.example" }, async (lease) => {
      seen = lease;
      // While the function runs, the lease is active.
      expect(await client.proxy.counts()).toEqual({ counts: { p1: 1 } });
      return { result: "banned", value: `fetched through ${lease.proxy}` };
    });
    expect(value).toBe("fetched through p1");
    expect(seen).toMatchObject({ proxy: "p1", target: "shop.example", stats: { considered: 1 } });
    expect(seen!.signal.aborted).toBe(false);
    expect(await client.proxy.counts()).toEqual({ counts: {} });
    const [p1] = (await client.proxy.list()).proxies;
    expect(p1!.cooldowns.map((c) => c.target)).toEqual(["shop.example"]);
    // Released, not just expired: the lease no longer resolves.
    await expectRejects(client.proxy.report({ leaseId: seen!.id, result: "ok" }), UnknownLeaseError, "UNKNOWN_LEASE", 404);
    // The ban applies to that target only.
    await expectRejects(client.proxy.acquire({ ttlMs: 1000, target: "shop.example" }), NoMatchError, "NO_MATCH", 409);
    expect((await client.proxy.acquire({ ttlMs: 1000, target: "other.example" })).lease.proxy).toBe("p1");
  });

  it("a lease held with `await using` is reported and released at the end of the block", async () => {
    const { client } = await h.start();
    await client.proxy.register({ proxy: "p1", maxLeases: 1 });
    let id = "";
    {
      await using lease = await client.proxy.lease({ ttlMs: 30_000, target: "site.example" });
      id = lease.id;
      expect([lease.proxy, lease.target, lease.stats.considered]).toEqual(["p1", "site.example", 1]);
      expect(await client.proxy.counts()).toEqual({ counts: { p1: 1 } });
      // ok is not sent (the service would record nothing); a rate limit is.
      expect(await lease.report("ok")).toEqual({});
      expect((await lease.report("rate_limited", "api.site.example")).cooldownUntilAt).toEqual(expect.any(String));
    }
    expect(await client.proxy.counts()).toEqual({ counts: {} });
    await expectRejects(client.proxy.report({ leaseId: id, result: "ok" }), UnknownLeaseError, "UNKNOWN_LEASE", 404);
    expect((await client.proxy.list()).proxies[0]!.cooldowns.map((c) => c.target)).toEqual(["api.site.example"]);
  });

  it("withLease reports nothing for ok or a throw, releases either way, and aborts its signal when the TTL runs out", async () => {
    const { client } = await h.start();
    await client.proxy.register({ proxy: "p1", maxLeases: 1 });
    expect(await client.proxy.withLease({ ttlMs: 30_000 }, () => Promise.resolve({ result: "ok", value: 1 }))).toBe(1);

    const boom = new Error("parser failed");
    let leaseId = "";
    await expect(
      client.proxy.withLease({ ttlMs: 30_000, target: "t" }, (lease) => {
        leaseId = lease.id;
        return Promise.reject(boom);
      }),
    ).rejects.toBe(boom);
    expect(await client.proxy.counts()).toEqual({ counts: {} });
    expect((await client.proxy.list()).proxies[0]!.cooldowns).toEqual([]);
    await expectRejects(client.proxy.report({ leaseId, result: "ok" }), UnknownLeaseError, "UNKNOWN_LEASE", 404);

    const ttlMs = 300;
    const started = performance.now();
    const waited = await client.proxy.withLease({ ttlMs }, async (lease) => {
      await new Promise((resolve) => lease.signal.addEventListener("abort", resolve, { once: true }));
      return { result: "ok", value: performance.now() - started };
    });
    // Not before the TTL ran out since the send (timer granularity aside); that it comes exactly then is
    // proxy-lease.unit.test.ts's, on fake timers: no wall-clock upper bound here.
    expect(waited).toBeGreaterThanOrEqual(ttlMs - 5);
  });
});
