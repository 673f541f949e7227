/**
 * The route and host contract over NATS: reply shapes, error codes with
 * their headers, what the stream records (types, data, requestId, subjects),
 * and read-your-writes across two instances.
 */
import { describe, expect, it } from "vitest";
import { uniquePrefix } from "../support/nats.ts";
import { srv } from "../support/lock-fixtures.ts";
import { dataOf, eventsOfKind, failed, ok, routeClient, useRouteServices } from "../support/route-fixtures.ts";

const h = useRouteServices();

describe("routes over NATS", () => {
  it("answers every op with the contract's shapes and records one event per change", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const c = routeClient(svc.nc, prefix);
    expect(ok(await c.setHost({ host: "gpu-a", healthy: true }))).toEqual({ host: "gpu-a" });
    expect(ok(await c.setHost({ host: "gpu-b", healthy: true, draining: false, requestId: "set-b" }))).toEqual({ host: "gpu-b" });
    const route = "chat.eu/*>";
    const candidates = ["gpu-a", "gpu-b"];
    expect(ok(await c.acquire({ route, fp: "", model: "m", candidates }))).toEqual({ host: "gpu-a", reused: false });
    expect(ok(await c.acquire({ route, fp: "", model: "m", candidates }))).toEqual({ host: "gpu-a", reused: true });
    expect(ok(await c.acquire({ route, fp: "conv-1", model: "m", candidates, requestId: "acq-1" }))).toEqual({
      host: "gpu-a",
      reused: true,
    });
    expect(ok(await c.acquire({ route: "other", fp: "", model: "m", candidates }))).toEqual({ host: "gpu-b", reused: false });
    expect(ok(await c.move({ route, fp: "conv-1", model: "m", host: "gpu-b" }))).toEqual({ from: "gpu-a", host: "gpu-b" });
    expect(ok(await c.candidates({ route, hosts: ["gpu-c"] }))).toEqual({});
    expect(ok(await c.pin({ route, host: "gpu-a" }))).toEqual({});
    const got = ok(await c.get({ route }));
    expect(got.pinned).toBe("gpu-a");
    expect(got.leases!.map((l) => [l.route, l.fp, l.model, l.host])).toEqual([[route, "", "m", "gpu-a"]]);
    expect(Date.parse(got.leases![0]!.createdAt)).not.toBeNaN();
    expect(got.leases![0]!.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(ok(await c.listHosts())).toEqual({
      hosts: [
        { host: "gpu-a", healthy: true, draining: false, maxLeases: null, active: 1, load: null },
        { host: "gpu-b", healthy: true, draining: false, maxLeases: null, active: 1, load: null },
      ],
    });
    expect(ok(await c.unpin({ route }))).toEqual({});
    expect(ok(await c.release({ route }))).toEqual({ released: 1 });
    expect(ok(await c.release({ route }))).toEqual({ released: 0 });
    expect(ok(await c.snapshot()).leases!.map((l) => l.route)).toEqual(["other"]);

    const events = await eventsOfKind(svc.service, "route");
    expect(events.filter((e) => e.event.id === route).map((e) => e.event.type)).toEqual([
      "RouteLeasePlaced",
      "RouteLeasePlaced",
      "RouteLeasePlaced",
      "RouteCandidatesSeen",
      "RoutePinned",
      "RouteUnpinned",
      "RouteReleased",
    ]);
    const inherit = events.find((e) => e.event.requestId === "acq-1")!;
    expect(inherit.event).toMatchObject({ v: 1, kind: "route", id: route, type: "RouteLeasePlaced" });
    expect(dataOf(inherit)).toEqual({ fp: "conv-1", model: "m", host: "gpu-a", from: "", reason: "new", reused: true });
    const pin = events.find((e) => e.event.type === "RoutePinned")!;
    expect(dataOf(pin)).toEqual({ host: "gpu-a", displaced: [{ fp: "conv-1", model: "m", host: "gpu-b" }] });
    // Each actor writes its own subject: the id is encoded into one token.
    const messages = [];
    for await (const m of svc.service.log.readStream({ filter: svc.service.subjects.event("route", route) })) messages.push(m);
    expect(messages).toHaveLength(7);
    const hostEvents = await eventsOfKind(svc.service, "host");
    expect(hostEvents.map((e) => [e.event.id, e.event.type, e.event.requestId])).toEqual([
      ["gpu-a", "HostStateSet", undefined],
      ["gpu-b", "HostStateSet", "set-b"],
    ]);
  });

  it("refuses with the contract's codes, statuses and headers", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const c = routeClient(svc.nc, prefix);
    failed(await c.acquire({ route: "r", fp: "", model: "m", candidates: ["down"] }), 503, "NO_HOST");
    failed(await c.acquire({ route: "r", fp: "", model: "m", candidates: [] }), 503, "NO_HOST");
    failed(await c.pin({ route: "r", host: "never" }), 404, "UNKNOWN_HOST");
    ok(await c.pin({ route: "r", host: "down" })); // seen by the failed acquire
    failed(await c.acquire({ route: "r", fp: "x", model: "m", candidates: [] }), 503, "PINNED_DOWN");
    failed(await c.acquire({ route: "r", model: "m", candidates: [] }), 400, "BAD_REQUEST");
    failed(await c.setHost({ host: "h" }), 400, "BAD_REQUEST");
    failed(await c.acquire("{"), 400, "BAD_REQUEST");
    failed(await c.get({ route: "x".repeat(257) }), 400, "BAD_REQUEST");
    const events = await eventsOfKind(svc.service, "route");
    expect(events.map((e) => [e.event.type, dataOf(e)])).toEqual([
      ["RouteCandidatesSeen", { seen: ["down"] }],
      ["RoutePinned", { host: "down", displaced: [] }],
    ]);
  });

  it("sees a host change made through one instance in an acquire decided by another", async () => {
    const prefix = uniquePrefix();
    const a = await h.service(prefix);
    const b = await h.service(prefix);
    const viaA = routeClient(a.nc, prefix);
    const viaB = routeClient(b.nc, prefix);
    // The queue group picks the instance of each request; $SRV.STATS tells which one it was
    // (asked after each change and the acquire that follows it, so nothing comes between them).
    const HOST_SET = `${prefix}.v1.host.set`;
    const ACQUIRE = `${prefix}.v1.route.acquire`;
    let last = [new Map<string, number>(), new Map<string, number>()];
    /** The instance (0 = a, 1 = b) that answered the one request of each of `subjects` since the last call. */
    const answeredBy = async (...subjects: string[]) => {
      const now = await Promise.all(
        [a, b].map(
          async (s) => new Map((await srv(s.nc, "STATS", s.service.micro.id)).endpoints!.map((e) => [e.subject, e.num_requests] as const)),
        ),
      );
      const by = subjects.map((subject) => {
        const grew = [0, 1].filter((i) => now[i]!.get(subject)! > (last[i]!.get(subject) ?? 0));
        expect(grew).toHaveLength(1);
        return grew[0]!;
      });
      last = now;
      return by;
    };
    // Until each instance has decided an acquire after a health change (up and down) made through the other.
    const crossed = new Set<string>();
    for (let i = 0; i < 60 && crossed.size < 4; i++) {
      const host = `h${i}`;
      ok(await viaA.setHost({ host, healthy: true }));
      expect(ok(await viaB.acquire({ route: `r${i}`, fp: "", model: "m", candidates: [host] }))).toEqual({ host, reused: false });
      const [upBy, acquiredBy] = await answeredBy(HOST_SET, ACQUIRE);
      if (upBy !== acquiredBy) crossed.add(`up, decided by ${acquiredBy}`);
      ok(await viaB.setHost({ host, healthy: false }));
      failed(await viaA.acquire({ route: `r${i}`, fp: "", model: "m", candidates: [host] }), 503, "NO_HOST");
      const [downBy, refusedBy] = await answeredBy(HOST_SET, ACQUIRE);
      if (downBy !== refusedBy) crossed.add(`down, decided by ${refusedBy}`);
    }
    expect([...crossed].sort()).toEqual(["down, decided by 0", "down, decided by 1", "up, decided by 0", "up, decided by 1"]);
  });
});
