/**
 * Durability (the seed loses everything on restart; leasehold keeps it in
 * the stream): a new service on the same prefix answers as the old one
 * would, with the same leases, counts and cooldowns, and remembers the
 * requestIds of acquisitions within the dedup window.
 */
import { describe, expect, it } from "vitest";
import { uniquePrefix } from "../support/nats.ts";
import { expectFailure, expectOk, proxyClient, proxyEvents, useProxyIntHarness } from "../support/proxy-fixtures.ts";

const h = useProxyIntHarness();

describe("restart", () => {
  it("keeps leases (a removed proxy's too), counts, cooldowns and acquisition requestIds", async () => {
    const prefix = uniquePrefix();
    const first = await h.service(prefix);
    const client = await h.connect();
    const proxies = proxyClient(client, prefix);
    expectOk(await proxies.call("register", { proxy: "a", maxLeases: 2 }));
    expectOk(await proxies.call("register", { proxy: "b", maxLeases: 2, latencyMs: 10 }));
    expectOk(await proxies.call("register", { proxy: "gone", maxLeases: 1, latencyMs: 99 }));
    const onA = expectOk(await proxies.call("acquire", { ttlMs: 120_000, target: "shop", requestId: "acq-1" }));
    expect(onA.lease!.proxy).toBe("a");
    const onB = expectOk(await proxies.call("acquire", { ttlMs: 120_000 }));
    expect(onB.lease!.proxy).toBe("b");
    const onGone = expectOk(await proxies.call("acquire", { ttlMs: 120_000, candidates: ["gone"] }));
    expectOk(await proxies.call("remove", { proxy: "gone" }));
    const cooldown = expectOk(await proxies.call("report", { leaseId: onA.lease!.id, result: "banned" }));
    const released = expectOk(await proxies.call("acquire", { ttlMs: 120_000 }));
    expectOk(await proxies.call("release", { leaseId: released.lease!.id }));
    const list = expectOk(await proxies.call("list", {}));
    const counts = expectOk(await proxies.call("counts", {}));
    expect(counts.counts).toEqual({ a: 1, b: 1 });
    const eventsBefore = (await proxyEvents(first.service.log, first.service.subjects)).length;
    await first.stop();

    const second = await h.service(prefix);
    expect(expectOk(await proxies.call("list", {}))).toEqual(list);
    expect(expectOk(await proxies.call("counts", {}))).toEqual(counts);
    // The repeat of an acquisition answers as the first time and grants nothing.
    expect(expectOk(await proxies.call("acquire", { ttlMs: 120_000, target: "shop", requestId: "acq-1" }))).toEqual(onA);
    // a is cooling down for "shop": an acquisition for shop goes to b.
    const forShop = expectOk(await proxies.call("acquire", { ttlMs: 120_000, target: "shop" }));
    expect(forShop.lease!.proxy).toBe("b");
    expect(forShop.stats).toEqual({ considered: 2, unhealthy: 0, inCooldown: 1, atCapacity: 0 });
    expect(list.proxies!.find((p) => p.proxy === "a")!.cooldowns).toEqual([
      { target: "shop", untilAt: cooldown.cooldownUntilAt, streak: 1 },
    ]);
    // Leases from before the restart resolve (the removed proxy's too); the released one does not.
    expect(expectOk(await proxies.call("report", { leaseId: onGone.lease!.id, result: "ok" }))).toEqual({});
    expectFailure(await proxies.call("report", { leaseId: released.lease!.id, result: "ok" }), 404, "UNKNOWN_LEASE");
    expectOk(await proxies.call("release", { leaseId: onB.lease!.id }));
    expect(expectOk(await proxies.call("counts", {})).counts).toEqual({ a: 1, b: 1 });
    const events = await proxyEvents(second.service.log, second.service.subjects);
    expect(events.slice(eventsBefore).map((e) => e.event.type)).toEqual(["ProxyLeaseGranted", "ProxyLeaseReleased"]);
  });
});
