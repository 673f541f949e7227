/**
 * Host capacity across two service instances on one prefix: many clients
 * acquire new leases at once, spread over both instances by the queue group,
 * and no host ever gets more new leases than its `maxLeases`, by the replies,
 * by `host.list` and by the stream (each placement on a capped host names the
 * admission its host recorded). Both choosers.
 */
import { describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { ROUTE_CHOOSER_NAMES } from "../../src/contract/route-choosers.ts";
import { auditStream, type Violation } from "../../src/tools/audit.ts";
import { uniquePrefix } from "../support/nats.ts";
import { dataOf, eventsOfKind, failed, ok, routeClient, useRouteServices } from "../support/route-fixtures.ts";

const h = useRouteServices();

const CLIENTS = 12;
const ROUTES_PER_CLIENT = 4;
const CAPS = { h1: 3, h2: 2 } as const;

describe.each(ROUTE_CHOOSER_NAMES)("host capacity with the %s chooser, two instances", (routeChooser) => {
  it("never places more new leases on a host than its maxLeases, and answers NO_HOST with full once every candidate is full", async () => {
    const prefix = uniquePrefix();
    const a = await h.service(prefix, { routeChooser });
    const b = await h.service(prefix, { routeChooser });
    const admin = routeClient(a.nc, prefix);
    for (const [host, maxLeases] of Object.entries(CAPS)) ok(await admin.setHost({ host, healthy: true, maxLeases }));
    ok(await admin.setHost({ host: "h3", healthy: true, draining: true }));
    const connections: NatsConnection[] = [];
    for (let i = 0; i < CLIENTS; i++) connections.push(await h.connect());

    // Every client asks for new leases on distinct routes, all at once.
    const replies = await Promise.all(
      connections.flatMap((nc, i) =>
        Array.from({ length: ROUTES_PER_CLIENT }, (_, j) =>
          routeClient(nc, prefix, 20_000).acquire({ route: `r${i}-${j}`, fp: "", model: "m", candidates: ["h1", "h2", "h3"] }),
        ),
      ),
    );
    const placed = new Map<string, number>();
    let refused = 0;
    for (const reply of replies) {
      if (reply.status === undefined) {
        const host = ok(reply).host!;
        placed.set(host, (placed.get(host) ?? 0) + 1);
      } else {
        failed(reply, 503, "NO_HOST", { full: ["h1", "h2"] });
        refused++;
      }
    }
    expect(Object.fromEntries(placed)).toEqual(CAPS);
    expect(refused).toBe(CLIENTS * ROUTES_PER_CLIENT - CAPS.h1 - CAPS.h2);

    // Both instances decided acquires.
    const stats = await Promise.all(
      [a, b].map(async (s) => {
        const msg = await s.nc.request(`$SRV.STATS.leasehold.${s.service.micro.id}`, undefined, { timeout: 5000 });
        return msg.json<{ endpoints: { name: string; num_requests: number }[] }>().endpoints.find((e) => e.name === "route_acquire")!
          .num_requests;
      }),
    );
    for (const n of stats) expect(n).toBeGreaterThan(0);

    // The stream agrees: one admission per placement, each placement naming its own admission on its host.
    const admissions = new Map(
      (await eventsOfKind(a.service, "host")).filter((e) => e.event.type === "HostLeaseAdmitted").map((e) => [e.seq, e]),
    );
    const placements = (await eventsOfKind(a.service, "route")).filter((e) => e.event.type === "RouteLeasePlaced");
    expect(placements).toHaveLength(CAPS.h1 + CAPS.h2);
    for (const p of placements) {
      const admission = admissions.get(dataOf(p)["admission"] as number);
      expect(admission, JSON.stringify(p)).toBeDefined();
      expect(admission!.event.id).toBe(dataOf(p)["host"]);
      expect(dataOf(admission!)).toMatchObject({ route: p.event.id, fp: "", model: "m" });
    }
    // The audit finds nothing: no admission on a full host, no new lease on one.
    const violations: Violation[] = [];
    await auditStream(a.service.log.readStream(), a.service.subjects, {
      cooldownMs: 60_000,
      maxTtlMs: 30_000,
      onViolation: (v) => violations.push(v),
    });
    expect(violations).toEqual([]);
    for (const host of [a, b]) {
      const listed = ok(await routeClient(host.nc, prefix).listHosts()).hosts;
      expect(listed).toEqual([
        { host: "h1", healthy: true, draining: false, maxLeases: 3, active: 3, load: null },
        { host: "h2", healthy: true, draining: false, maxLeases: 2, active: 2, load: null },
        { host: "h3", healthy: true, draining: true, maxLeases: null, active: 0, load: null },
      ]);
    }
  });
});

describe("host capacity rules over NATS", () => {
  it("frees a slot for the next acquire at once, whichever instance took the release", async () => {
    const prefix = uniquePrefix();
    const a = await h.service(prefix);
    await h.service(prefix);
    const c = routeClient(a.nc, prefix);
    ok(await c.setHost({ host: "h1", healthy: true, maxLeases: 1 }));
    // The queue group spreads these over both instances: a release seen by one is counted by the other at once.
    for (let i = 0; i < 12; i++) {
      expect(ok(await c.acquire({ route: `r${i}`, fp: "", model: "m", candidates: ["h1"] }))).toEqual({ host: "h1", reused: false });
      failed(await c.acquire({ route: `x${i}`, fp: "", model: "m", candidates: ["h1"] }), 503, "NO_HOST", { full: ["h1"] });
      expect(ok(await c.release({ route: `r${i}` }))).toEqual({ released: 1 });
    }
  });

  it("keeps existing leases, pins and inherited hosts on a full host, and frees a slot when a lease goes", async () => {
    const prefix = uniquePrefix();
    const s = await h.service(prefix);
    const c = routeClient(s.nc, prefix);
    ok(await c.setHost({ host: "h1", healthy: true, maxLeases: 1 }));
    expect(ok(await c.acquire({ route: "r1", fp: "", model: "m", candidates: ["h1"] }))).toEqual({ host: "h1", reused: false });
    // Full: a new key is refused, the existing lease is reused, a conversation inherits its route's host.
    failed(await c.acquire({ route: "r2", fp: "", model: "m", candidates: ["h1"] }), 503, "NO_HOST", { full: ["h1"] });
    expect(ok(await c.acquire({ route: "r1", fp: "", model: "m", candidates: ["h1"] }))).toEqual({ host: "h1", reused: true });
    expect(ok(await c.acquire({ route: "r1", fp: "c1", model: "m", candidates: ["h1"] }))).toEqual({ host: "h1", reused: true });
    // A pinned route places on its pin, full or not.
    ok(await c.candidates({ route: "r3", hosts: ["h1"] }));
    ok(await c.pin({ route: "r3", host: "h1" }));
    expect(ok(await c.acquire({ route: "r3", fp: "", model: "m", candidates: [] }))).toEqual({ host: "h1", reused: false });
    // A lowered cap leaves the host over it; leases stay (sticky).
    ok(await c.setHost({ host: "h1", healthy: true, maxLeases: 0 }));
    expect(ok(await c.listHosts()).hosts).toEqual([{ host: "h1", healthy: true, draining: false, maxLeases: 0, active: 3, load: null }]);
    expect(ok(await c.acquire({ route: "r1", fp: "", model: "m", candidates: ["h1"] }))).toEqual({ host: "h1", reused: true });
    // No healthy, non-draining candidate at all: NO_HOST as in v1, without full.
    const none = await c.acquire({ route: "r2", fp: "", model: "m", candidates: ["h9"] });
    failed(none, 503, "NO_HOST");
    expect(none.body.error).not.toHaveProperty("full");
    // host.set sets the whole state: leaving maxLeases out lifts the cap.
    ok(await c.setHost({ host: "h1", healthy: true }));
    expect(ok(await c.acquire({ route: "r2", fp: "", model: "m", candidates: ["h1"] }))).toEqual({ host: "h1", reused: false });
    // A cap of 2 with 4 leases, then releases bring it under: a slot opens again.
    ok(await c.setHost({ host: "h1", healthy: true, maxLeases: 3 }));
    failed(await c.acquire({ route: "r4", fp: "", model: "m", candidates: ["h1"] }), 503, "NO_HOST", { full: ["h1"] });
    ok(await c.release({ route: "r1" }));
    expect(ok(await c.acquire({ route: "r4", fp: "", model: "m", candidates: ["h1"] }))).toEqual({ host: "h1", reused: false });
  });
});
