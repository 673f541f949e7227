/**
 * An admission whose admitter crashed between admission and placement holds
 * a slot only until the next admitter onto that host finds it stale: it is
 * lapsed (RouteAdmissionLapsed on its route, taking the place the lease
 * would have had), and the slot is free again. A fresh one still counts.
 */
import { describe, expect, it } from "vitest";
import { LAPSE_ADMISSION_AFTER_MS } from "../../src/route/host-admissions.ts";
import { encodeEvent } from "../../src/events/envelope.ts";
import { startRouteHarness } from "../support/route-harness.ts";

describe("a stuck host admission", () => {
  it("counts while fresh, and is lapsed by the next admitter once stale, freeing its slot", async () => {
    const h = await startRouteHarness();
    try {
      expect((await h.call("host.set", { host: "h1", healthy: true, maxLeases: 1 })).ok).toBe(true);
      // A crashed admitter's admission for route "ghost" (which never got its lease).
      const at = new Date(h.clock.now()).toISOString();
      h.log.appendRaw(
        h.subjects.event("host", "h1"),
        encodeEvent({
          type: "HostLeaseAdmitted",
          v: 1,
          at,
          kind: "host",
          id: "h1",
          data: { route: "ghost", fp: "", model: "m", routeSeq: 0, closed: [] },
        }),
      );
      const acquire = () => h.call("route.acquire", { route: "r1", fp: "", model: "m", candidates: ["h1"] });
      const fresh = await acquire();
      expect(fresh).toMatchObject({ ok: false, rejection: { code: "NO_HOST", details: { full: ["h1"] } } });

      h.clock.advance(LAPSE_ADMISSION_AFTER_MS);
      expect(await acquire()).toEqual({ ok: true, reply: { host: "h1", reused: false } });
      expect(h.events("route", "ghost").map((e) => [e.event.type, e.event.data])).toEqual([
        ["RouteAdmissionLapsed", { host: "h1", admission: expect.any(Number) as number }],
      ]);
      // The slot is taken now by r1's lease: the next new key finds h1 full.
      const next = await h.call("route.acquire", { route: "r2", fp: "", model: "m", candidates: ["h1"] });
      expect(next).toMatchObject({ ok: false, rejection: { code: "NO_HOST", details: { full: ["h1"] } } });
    } finally {
      await h.stop();
    }
  });
});
