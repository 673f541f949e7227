/**
 * The route and host folds (shared by actors, tables and read endpoints) and
 * the tables that follow the stream: lease times, seen sets, pins, a fold
 * that is idempotent per event, and active counts per host.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { encodeEvent, type HistoryEntry } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { evolveHost, initialHostState } from "../../src/host/state.ts";
import { HostTable } from "../../src/host/table.ts";
import { evolveRoute, initialRouteState, leaseKey, sortedLeases } from "../../src/route/state.ts";
import { compareCodeUnits } from "../../src/contract/code-units.ts";
import { RouteTable } from "../../src/route/table.ts";
import { routeLogic } from "../../src/route/logic.ts";
import { hostLogic } from "../../src/host/logic.ts";
import { chooserNamed } from "../../src/route/chooser.ts";
import { projectionOf } from "../support/projections.ts";
import { placed, pinned, routeEvent, ROUTE, seen, T0, touched } from "../support/route-given.ts";

const fold = (history: HistoryEntry[]) => history.reduce(evolveRoute, initialRouteState(ROUTE));

describe("leaseKey", () => {
  it("is JSON.stringify([fp, model]) for any two strings (snapshots hold it), quotes, controls and surrogates included", () => {
    const text = fc.oneof(
      fc.string(),
      fc.string({ unit: "binary" }),
      fc.constantFrom("", '"', "\\", "\n", " ", "\u001f", "\ud800", "\udfff", "a\udc00b", "é🔒"),
    );
    fc.assert(
      fc.property(text, text, (fp, model) => {
        expect(leaseKey(fp, model)).toBe(JSON.stringify([fp, model]));
      }),
      { numRuns: 5000 },
    );
  });
});

describe("evolveRoute", () => {
  it("stamps a placement's creation and last use with the event's instant, and a touch moves only the last use", () => {
    const state = fold([placed("c1", "m", "a", T0), touched("c1", "m", T0 + 500)]);
    const lease = state.leases.get(leaseKey("c1", "m"))!;
    expect(lease).toMatchObject({ host: "a", createdAt: new Date(T0).toISOString(), lastUsedAt: new Date(T0 + 500).toISOString() });
    expect(lease.lastUsedAtMs).toBe(T0 + 500);
    // A touch never moves the last use back.
    expect(fold([placed("c1", "m", "a", T0 + 500), touched("c1", "m", T0)]).leases.get(leaseKey("c1", "m"))!.lastUsedAtMs).toBe(T0 + 500);
  });

  it("keeps the last use as recorded when a touch is not later, even one spelling the same instant differently", () => {
    // The stream accepts any RFC 3339 UTC instant; this one is T0 without milliseconds.
    const sameInstant = decodeEvent(
      encodeEvent({
        type: "RouteLeaseTouched",
        v: 1,
        at: "2026-01-01T00:00:00Z",
        kind: "route",
        id: ROUTE,
        data: { fp: "c1", model: "m" },
      }),
      900,
    );
    const state = fold([placed("c1", "m", "a", T0)]);
    const lease = evolveRoute(state, sameInstant).leases.get(leaseKey("c1", "m"))!;
    expect(Date.parse("2026-01-01T00:00:00Z")).toBe(T0);
    expect(lease.lastUsedAt).toBe(new Date(T0).toISOString());
  });

  it("sorts leases by fp, then by model when the fps are equal, whatever order they were placed in", () => {
    const keys = [
      ["c1", "n"],
      ["", "m"],
      ["c1", "m"],
      ["c1", "l"],
      ["", "n"],
    ] as const;
    const expected = [
      ["", "m"],
      ["", "n"],
      ["c1", "l"],
      ["c1", "m"],
      ["c1", "n"],
    ];
    for (const order of [keys, [...keys].reverse(), [keys[2], keys[0], keys[4], keys[1], keys[3]]]) {
      const state = fold(order.map(([fp, model]) => placed(fp, model, "a")));
      expect(sortedLeases(state).map((l) => [l.fp, l.model])).toEqual(expected);
    }
    expect(compareCodeUnits("c1", "c1")).toBe(0);
    expect(compareCodeUnits("Z", "a")).toBeLessThan(0);
    expect(compareCodeUnits("é", "z")).toBeGreaterThan(0);
  });

  it("collects every candidate and every placement host into the seen set", () => {
    const moved = routeEvent("RouteLeasePlaced", { fp: "x", model: "m", host: "d", from: "", reason: "ctx", reused: false });
    const state = fold([
      seen("a"),
      placed("c1", "m", "b", T0, { seen: ["c"] }),
      moved,
      routeEvent("RouteLeaseTouched", { fp: "c1", model: "m", seen: ["e"] }),
    ]);
    expect([...state.seen].sort()).toEqual(["a", "b", "c", "d", "e"]);
  });

  it("drops displaced leases on a pin, listed leases on release and expiry, and keeps leases on unpin", () => {
    let state = fold([seen("a", "b"), placed("c1", "m", "a"), placed("c2", "m", "b")]);
    state = evolveRoute(state, routeEvent("RoutePinned", { host: "a", displaced: [{ fp: "c2", model: "m", host: "b" }] }));
    expect(state.pinned).toBe("a");
    expect(sortedLeases(state).map((l) => l.fp)).toEqual(["c1"]);
    state = evolveRoute(state, routeEvent("RouteUnpinned", {}));
    expect(state.pinned).toBe("");
    expect(sortedLeases(state).map((l) => l.fp)).toEqual(["c1"]);
    state = evolveRoute(state, routeEvent("RouteLeaseExpired", { fp: "c1", model: "m", host: "a" }));
    expect(state.leases.size).toBe(0);
  });

  it("keys leases unambiguously, whatever characters fp and model hold", () => {
    const state = fold([placed("a\u0000b", "", "h1"), placed("a", "b\u0000", "h2")]);
    expect(state.leases.size).toBe(2);
  });

  it("ignores a message that does not parse and a type no route writes, but for the route's last sequence", () => {
    const state = fold([seen("a"), placed("c1", "m", "a")]);
    expect(evolveRoute(state, { seq: 99, unparsable: true, reason: "not JSON" })).toEqual({ ...state, lastSeq: 99 });
    const foreign = {
      seq: 100,
      event: { type: "LockReset", v: 1, at: new Date(T0).toISOString(), kind: "lock", id: "x", data: { generation: 1 } },
    } as HistoryEntry;
    expect(evolveRoute(state, foreign)).toEqual({ ...state, lastSeq: 100 });
  });

  it("is idempotent per event: applying any event twice gives the state of applying it once", () => {
    const hosts = fc.constantFrom("a", "b", "c");
    const keys = fc.record({ fp: fc.constantFrom("", "c1", "c2"), model: fc.constantFrom("m", "n") });
    const event = fc.oneof(
      fc.tuple(keys, hosts, fc.nat(1000)).map(([k, h, t]) => placed(k.fp, k.model, h, T0 + t)),
      fc.tuple(keys, fc.nat(1000)).map(([k, t]) => touched(k.fp, k.model, T0 + t)),
      fc.tuple(keys, hosts).map(([k, h]) => routeEvent("RouteLeaseExpired", { ...k, host: h })),
      fc.array(hosts, { minLength: 1 }).map((hs) => seen(...hs)),
      hosts.map((h) => pinned(h)),
      fc.constant(routeEvent("RouteUnpinned", {})),
      fc
        .array(fc.tuple(keys, hosts), { maxLength: 3 })
        .map((ls) => routeEvent("RouteReleased", { released: ls.map(([k, h]) => ({ ...k, host: h })) })),
    );
    fc.assert(
      fc.property(fc.array(event, { maxLength: 12, size: "max" }), event, (history, e) => {
        const once = evolveRoute(fold(history), e);
        expect(evolveRoute(once, e)).toEqual(once);
      }),
      { numRuns: 200 },
    );
  });
});

describe("evolveHost", () => {
  it("starts unhealthy and not set, and takes each HostStateSet as it is", () => {
    const s0 = initialHostState("h");
    expect(s0).toEqual({ host: "h", set: false, healthy: false, draining: false, maxLeases: null, admissions: [] });
    const entry = {
      seq: 1,
      event: { type: "HostStateSet", v: 1, at: new Date(T0).toISOString(), kind: "host", id: "h", data: { healthy: true, draining: true } },
    } as HistoryEntry;
    expect(evolveHost(s0, entry)).toEqual({ host: "h", set: true, healthy: true, draining: true, maxLeases: null, admissions: [] });
    expect(evolveHost(s0, { seq: 2, unparsable: true, reason: "x" })).toBe(s0);
  });
});

describe("HostTable and RouteTable", () => {
  const subjects = new Subjects("p");
  const encode = (kind: "host" | "route", id: string, type: string, data: Record<string, unknown>) =>
    encodeEvent({ type, v: 1, at: new Date(T0).toISOString(), kind, id, data });

  it("count active leases per host across routes, through placements, moves, pins, releases and expiry", async () => {
    const log = new MemoryEventLog();
    const routes = new RouteTable(projectionOf(log, subjects, routeLogic({ routeIdleMs: 1000, chooser: chooserNamed("least-loaded") })));
    await routes.start();
    const put = (route: string, type: string, data: Record<string, unknown>) =>
      log.appendRaw(subjects.event("route", route), encode("route", route, type, data));
    const counts = () => Object.fromEntries([...routes.activeByHost()].sort());
    put("r1", "RouteLeasePlaced", { fp: "", model: "m", host: "a", from: "", reason: "new", reused: false });
    put("r1", "RouteLeasePlaced", { fp: "c1", model: "m", host: "a", from: "", reason: "new", reused: true });
    put("r2", "RouteLeasePlaced", { fp: "", model: "m", host: "b", from: "", reason: "new", reused: false });
    expect(counts()).toEqual({ a: 2, b: 1 });
    put("r1", "RouteLeasePlaced", { fp: "c1", model: "m", host: "b", from: "a", reason: "ctx", reused: false });
    expect(counts()).toEqual({ a: 1, b: 2 });
    put("r1", "RouteLeaseTouched", { fp: "c1", model: "m" });
    expect(counts()).toEqual({ a: 1, b: 2 });
    put("r1", "RoutePinned", { host: "a", displaced: [{ fp: "c1", model: "m", host: "b" }] });
    expect(counts()).toEqual({ a: 1, b: 1 });
    put("r2", "RouteLeaseExpired", { fp: "", model: "m", host: "b" });
    expect(counts()).toEqual({ a: 1 });
    put("r1", "RouteReleased", { released: [{ fp: "", model: "m", host: "a" }] });
    expect(counts()).toEqual({});
    expect(routes.activeOn("a")).toBe(0);
    await routes.stop();
  });

  it("hand out an immutable host snapshot that a later host event does not change", async () => {
    const log = new MemoryEventLog();
    const hosts = new HostTable(projectionOf(log, subjects, hostLogic()));
    await hosts.start();
    log.appendRaw(subjects.event("host", "a"), encode("host", "a", "HostStateSet", { healthy: true, draining: false }));
    const before = hosts.snapshot();
    log.appendRaw(subjects.event("host", "a"), encode("host", "a", "HostStateSet", { healthy: false, draining: false }));
    expect(before.get("a")?.healthy).toBe(true);
    expect(hosts.snapshot().get("a")?.healthy).toBe(false);
    await hosts.fresh();
    await hosts.stop();
  });
});
