/**
 * Caps under real concurrency: two service instances on one prefix (one queue
 * group), 200 acquisitions at once from 8 connections, over proxies whose
 * total capacity is 20. Exactly 20 succeed, the rest are NO_MATCH, and the
 * stream shows no instant at which a proxy held more leases than its cap.
 */
import { describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { uniquePrefix } from "../support/nats.ts";
import { expectFailure, expectOk, proxyClient, proxyEvents, useProxyIntHarness } from "../support/proxy-fixtures.ts";
import { capViolations } from "../support/proxy-caps.ts";

const h = useProxyIntHarness();

const CONNECTIONS = 8;
const ACQUISITIONS = 200;
/** Caps of the proxies: total 20, two of them never leasable. */
const CAPS = [0, 1, 2, 3, 4, 0, 2, 3, 4, 1];
const TOTAL = CAPS.reduce((a, b) => a + b, 0);

describe("200 concurrent acquisitions, 2 instances, total capacity 20", () => {
  it("grants exactly the capacity, refuses the rest with NO_MATCH, and never exceeds a cap", async () => {
    expect(TOTAL).toBe(20);
    const prefix = uniquePrefix();
    const a = await h.service(prefix);
    const b = await h.service(prefix);
    const connections: NatsConnection[] = [];
    for (let i = 0; i < CONNECTIONS; i++) connections.push(await h.connect());
    const clients = connections.map((nc) => proxyClient(nc, prefix, 20_000));
    for (const [i, maxLeases] of CAPS.entries()) {
      expectOk(await clients[i % CONNECTIONS]!.call("register", { proxy: `proxy-${i}`, maxLeases, latencyMs: i % 3 }));
    }

    // Long TTLs: no lease may expire during the test and free a slot.
    const replies = await Promise.all(
      Array.from({ length: ACQUISITIONS }, (_, i) => clients[i % CONNECTIONS]!.call("acquire", { ttlMs: 120_000, target: `t${i % 4}` })),
    );
    const granted = replies.filter((r) => r.status === undefined);
    expect(granted).toHaveLength(TOTAL);
    for (const r of replies) {
      if (r.status !== undefined) expectFailure(r, 409, "NO_MATCH");
    }
    // Every refusal seen after the proxies filled up counts all ten as considered, none eligible.
    const last = replies
      .filter((r) => r.status !== undefined)
      .map((r) => r.body.error!.stats as { considered: number; unhealthy: number; inCooldown: number; atCapacity: number });
    for (const stats of last) {
      expect(stats.considered).toBe(CAPS.length);
      expect(stats.considered - stats.unhealthy - stats.inCooldown - stats.atCapacity).toBe(0);
    }

    // Per proxy, the replies never exceed the cap, and the ids are all distinct.
    const perProxy = new Map<string, number>();
    for (const r of granted) perProxy.set(r.body.lease!.proxy, (perProxy.get(r.body.lease!.proxy) ?? 0) + 1);
    expect(Object.fromEntries([...perProxy].sort())).toEqual(
      Object.fromEntries(
        CAPS.map((cap, i) => [`proxy-${i}`, cap] as const)
          .filter(([, cap]) => cap > 0)
          .sort(),
      ),
    );
    expect(new Set(granted.map((r) => r.body.lease!.id)).size).toBe(TOTAL);

    // Both instances see the same counts (read-your-writes across instances).
    const expectedCounts = Object.fromEntries([...perProxy].sort());
    for (const nc of [a.nc, b.nc]) {
      expect(expectOk(await proxyClient(nc, prefix).call("counts", {})).counts).toEqual(expectedCounts);
    }

    // From the stream: one grant per success, and no instant above a cap.
    const events = await proxyEvents(a.service.log, a.service.subjects);
    expect(events.filter((e) => e.event.type === "ProxyLeaseGranted")).toHaveLength(TOTAL);
    expect(capViolations(events)).toEqual([]);
  });

  it("stays within the caps while leases are released and re-acquired concurrently", async () => {
    const prefix = uniquePrefix();
    const a = await h.service(prefix);
    await h.service(prefix);
    const connections: NatsConnection[] = [];
    for (let i = 0; i < CONNECTIONS; i++) connections.push(await h.connect());
    const clients = connections.map((nc) => proxyClient(nc, prefix, 20_000));
    for (const [i, maxLeases] of [1, 2, 1].entries()) expectOk(await clients[0]!.call("register", { proxy: `p${i}`, maxLeases }));

    // 32 workers each try to acquire and release 4 times.
    let successes = 0;
    await Promise.all(
      Array.from({ length: 32 }, async (_, w) => {
        const client = clients[w % CONNECTIONS]!;
        for (let round = 0; round < 4; round++) {
          const r = await client.call("acquire", { ttlMs: 120_000 });
          if (r.status !== undefined) {
            expectFailure(r, 409, "NO_MATCH");
            continue;
          }
          successes++;
          expectOk(await client.call("release", { leaseId: r.body.lease!.id }));
        }
      }),
    );
    expect(successes).toBeGreaterThan(0);
    const events = await proxyEvents(a.service.log, a.service.subjects);
    expect(events.filter((e) => e.event.type === "ProxyLeaseGranted")).toHaveLength(successes);
    expect(events.filter((e) => e.event.type === "ProxyLeaseReleased")).toHaveLength(successes);
    expect(capViolations(events)).toEqual([]);
  });
});
