/**
 * The dashboard of an instance started again shows the state `leasehold
 * status` reads: the same held locks (owner, generation, expiry), live
 * sessions, proxies (capacity, leases, health) and hosts, on a real
 * nats-server. The dashboard reads the instance's own projections (one fold
 * per instance), which a restart restores from its snapshots; `status` asks
 * the service and folds the lock and session events itself.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Subjects } from "../../src/contract/subjects.ts";
import { collectStatus } from "../../src/tools/status.ts";
import { call, uniquePrefix } from "../support/nats.ts";
import { startHttpTestService, type HttpTestService } from "./support/http-service.ts";

const running: HttpTestService[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

async function ok(s: HttpTestService, prefix: string, kindOp: string, body: unknown): Promise<Record<string, unknown>> {
  const reply = await call(s.test.nc, prefix, kindOp, body);
  expect(reply.code, `${kindOp} ${JSON.stringify(reply.body)}`).toBeUndefined();
  return reply.body;
}

describe("the dashboard after a restart", () => {
  it("shows the same locks, sessions, proxies and hosts as status", async () => {
    const prefix = uniquePrefix();
    const first = await startHttpTestService(prefix);
    running.push(first);
    const send = (kindOp: string, body: unknown) => ok(first, prefix, kindOp, body);
    for (let i = 0; i < 6; i++) await send("lock.acquire", { name: `jobs/${i}`, owner: `w${i % 2}`, ttlMs: 30_000, requestId: `a${i}` });
    const released = (await send("lock.acquire", { name: "jobs/6", owner: "w2", ttlMs: 30_000 })) as { lease: { etag: string } };
    await send("lock.release", { name: "jobs/6", etag: released.lease.etag });
    const session = (await send("session.open", { owner: "svc", ttlMs: 30_000 })) as { session: { id: string } };
    await send("lock.acquire", { name: "jobs/under-session", owner: "svc", session: session.session.id });
    await send("proxy.register", { proxy: "p1", maxLeases: 3, latencyMs: 10, labels: {}, healthy: true });
    await send("proxy.register", { proxy: "p2", maxLeases: 1, latencyMs: 20, labels: {}, healthy: false });
    await send("proxy.acquire", { ttlMs: 600_000, target: "t", candidates: ["p1"], labels: {} });
    await send("host.set", { host: "h1", healthy: true, draining: false });
    await send("host.set", { host: "h2", healthy: false, draining: true });
    await first.stop();
    running.pop();

    const again = await startHttpTestService(prefix);
    running.push(again);
    const subjects = new Subjects(prefix);
    const status = await collectStatus(again.test.nc, again.test.service.log, subjects, Date.now);
    const view = again.http.feed.view();
    expect(view.caughtUp || view.seq === view.lastSeq).toBe(true);

    const heldInStatus = status.locks
      .filter((l) => l.state === "held")
      .map((l) => ({ name: l.name, owner: l.owner, generation: l.generation, expiresAtMs: Date.parse(l.expiresAt!) }));
    const heldOnPage = view.locks.map((l) => ({ name: l.name, owner: l.owner, generation: l.generation, expiresAtMs: l.expiresAtMs }));
    expect(heldOnPage).toEqual(heldInStatus);
    expect(heldOnPage.map((l) => l.name)).toEqual([...Array.from({ length: 6 }, (_, i) => `jobs/${i}`), "jobs/under-session"]);

    expect(view.sessions.length).toBe(status.sessions.live);
    expect(view.sessions.reduce((n, s) => n + s.lockCount, 0)).toBe(status.sessions.locks);

    const proxiesInStatus = status.proxies.map((p) => ({ proxy: p.proxy, maxLeases: p.maxLeases, active: p.active, healthy: p.healthy }));
    expect(view.proxies.map((p) => ({ proxy: p.proxy, maxLeases: p.maxLeases, active: p.active, healthy: p.healthy }))).toEqual(
      proxiesInStatus,
    );
    expect(proxiesInStatus.map((p) => p.active)).toEqual([1, 0]);

    const hostsInStatus = status.hosts.map((h) => ({ host: h.host, healthy: h.healthy, draining: h.draining }));
    expect(view.hosts.map((h) => ({ host: h.host, healthy: h.healthy, draining: h.draining }))).toEqual(hostsInStatus);
    expect(hostsInStatus).toHaveLength(2);
  });
});
