/**
 * Fresh reads without a look at the stream: a kind whose write watch has
 * counted no write by another writer since the last look is read as it is
 * (this instance's own appends reach it on their acknowledgement), and a
 * write by anyone else, acknowledged before the read was asked, is still seen.
 */
import { describe, expect, it } from "vitest";
import type { EventEnvelope } from "../../src/events/index.ts";
import { uniquePrefix } from "../support/nats.ts";
import { writeRaw } from "../support/lock-fixtures.ts";
import { expectOk, proxyClient, useProxyIntHarness } from "../support/proxy-fixtures.ts";
import type { TestService } from "../support/nats.ts";

const h = useProxyIntHarness();

/** Fresh reads of the proxy projection of `svc` so far. */
function proxyReads(svc: TestService): { readonly looked: number; readonly watched: number } {
  const projection = svc.service.runtime.projections().find((p) => p.kind === "proxy");
  if (projection === undefined) throw new Error("no proxy projection");
  return { ...projection.freshReads };
}

function registered(proxy: string): EventEnvelope {
  return {
    type: "ProxyRegistered",
    v: 1,
    at: new Date().toISOString(),
    kind: "proxy",
    id: proxy,
    data: { maxLeases: 4, latencyMs: 0, labels: {}, healthy: true },
  };
}

describe("fresh reads watched for others' writes", () => {
  it("reads without a look while only this instance writes", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const proxies = proxyClient(await h.connect(), prefix);
    expectOk(await proxies.call("register", { proxy: "p", maxLeases: 2 }));
    // The first read looks, and starts the watch; a look made with the watch live covers what it counted.
    expectOk(await proxies.call("acquire", { ttlMs: 60_000 }));
    await expect.poll(async () => (await proxies.call("acquire", { ttlMs: 1 }), proxyReads(svc).watched)).toBeGreaterThan(0);
    const before = proxyReads(svc);
    for (let i = 0; i < 20; i++) {
      const lease = expectOk(await proxies.call("acquire", { ttlMs: 60_000 })) as { lease: { id: string } };
      expectOk(await proxies.call("release", { leaseId: lease.lease.id }));
    }
    const after = proxyReads(svc);
    expect(after.looked).toBe(before.looked);
    expect(after.watched - before.watched).toBe(20);
  });

  it("sees a write another writer had acknowledged before the read, each time", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const other = await h.connect();
    const proxies = proxyClient(await h.connect(), prefix);
    expectOk(await proxies.call("register", { proxy: "p", maxLeases: 1 }));
    await expect.poll(async () => (await proxies.call("acquire", { ttlMs: 1 }), proxyReads(svc).watched)).toBeGreaterThan(0);
    const before = proxyReads(svc);
    for (let i = 0; i < 20; i++) {
      // Acknowledged to its writer before the acquire is sent, as another instance's reply would be.
      await writeRaw(other, svc.service.subjects.event("proxy", `raw-${i}`), registered(`raw-${i}`));
      const reply = expectOk(await proxies.call("acquire", { ttlMs: 60_000, candidates: [`raw-${i}`] })) as {
        lease: { proxy: string };
        stats: { considered: number };
      };
      expect(reply.lease.proxy).toBe(`raw-${i}`);
      // Unnamed, it ranks every proxy the other writer registered so far.
      const all = expectOk(await proxies.call("acquire", { ttlMs: 1 })) as { stats: { considered: number } };
      expect(all.stats.considered).toBe(i + 2);
    }
    expect(proxyReads(svc).looked - before.looked).toBeGreaterThanOrEqual(20);
  });

  it("leaves a kind no read model asked to watch looking at the stream on every fresh read", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const routes = svc.service.runtime.projection("route");
    for (let i = 0; i < 5; i++) await routes.fresh();
    expect(routes.freshReads).toEqual({ looked: 5, watched: 0 });
  });
});
