/**
 * Idle expiry with real time at short settings: the periodic sweep removes
 * leases unused for longer than --route-idle-ms with one RouteLeaseExpired
 * each, and never a pin. Waits on conditions, never a fixed sleep.
 */
import { describe, expect, it, vi } from "vitest";
import { uniquePrefix } from "../support/nats.ts";
import { dataOf, eventsOfKind, ok, routeClient, useRouteServices } from "../support/route-fixtures.ts";

const h = useRouteServices();

describe("idle expiry", () => {
  it("expires idle leases by the sweep, one event each, and keeps the pin", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix, { routeIdleMs: 300, sweepIntervalMs: 50 });
    const c = routeClient(svc.nc, prefix);
    ok(await c.setHost({ host: "a", healthy: true }));
    const t0 = Date.now();
    for (const fp of ["", "c1", "c2"]) ok(await c.acquire({ route: "r", fp, model: "m", candidates: ["a"] }));
    ok(await c.pin({ route: "r", host: "a" }));
    await vi.waitFor(
      async () => {
        expect(ok(await c.get({ route: "r" })).leases).toEqual([]);
      },
      { timeout: 10_000, interval: 50 },
    );
    // Not before they had been idle for longer than routeIdleMs.
    expect(Date.now() - t0).toBeGreaterThan(300);
    expect(ok(await c.get({ route: "r" })).pinned).toBe("a");
    const expired = (await eventsOfKind(svc.service, "route")).filter((e) => e.event.type === "RouteLeaseExpired");
    expect(expired.map((e) => dataOf(e)).sort((x, y) => String(x.fp).localeCompare(String(y.fp)))).toEqual([
      { fp: "", model: "m", host: "a" },
      { fp: "c1", model: "m", host: "a" },
      { fp: "c2", model: "m", host: "a" },
    ]);
    for (const e of expired) expect(Date.parse(e.event.at) - t0).toBeGreaterThan(300);
    expect(ok(await c.listHosts()).hosts).toEqual([{ host: "a", healthy: true, draining: false, maxLeases: null, active: 0, load: null }]);
    // The pinned route places anew afterwards.
    expect(ok(await c.acquire({ route: "r", fp: "c1", model: "m", candidates: [] }))).toEqual({ host: "a", reused: false });
  });

  it("keeps a lease that is in use while an idle one beside it expires", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix, { routeIdleMs: 400, sweepIntervalMs: 50 });
    const c = routeClient(svc.nc, prefix);
    ok(await c.setHost({ host: "a", healthy: true }));
    ok(await c.acquire({ route: "r", fp: "busy", model: "m", candidates: ["a"] }));
    ok(await c.acquire({ route: "r", fp: "idle", model: "m", candidates: ["a"] }));
    // The busy conversation keeps asking until the idle one is gone.
    await vi.waitFor(
      async () => {
        expect(ok(await c.acquire({ route: "r", fp: "busy", model: "m", candidates: ["a"] }))).toEqual({ host: "a", reused: true });
        expect(ok(await c.get({ route: "r" })).leases!.map((l) => l.fp)).toEqual(["busy"]);
      },
      { timeout: 10_000, interval: 40 },
    );
    const types = (await eventsOfKind(svc.service, "route")).map((e) => `${e.event.type}:${String(dataOf(e).fp)}`);
    expect(types.filter((t) => t.startsWith("RouteLeaseExpired"))).toEqual(["RouteLeaseExpired:idle"]);
    // Coalesced: far fewer touches than acquires of the busy conversation (one per routeIdleMs / 100 at most).
    expect(types.filter((t) => t === "RouteLeaseTouched:busy").length).toBeGreaterThan(0);
  });
});
