/**
 * The route module as the service runs it (endpoints, host and route tables,
 * actor runtime, sweep) on an in-memory log and a manual clock: what each
 * command appends, requestId idempotency, the failed acquire's candidates,
 * coalesced last use, idle expiry, arrival order, reads and restarts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { expireIdleLeases } from "../../src/route/idle-expiry.ts";
import { RouteTable } from "../../src/route/table.ts";
import { routeLogic } from "../../src/route/logic.ts";
import { chooserNamed } from "../../src/route/chooser.ts";
import { projectionOf } from "../support/projections.ts";
import { codeOf, okReply, startRouteHarness, T0, type RouteHarness, type RouteHarnessOptions } from "../support/route-harness.ts";

const IDLE = 60_000;
const running: RouteHarness[] = [];
afterEach(async () => {
  for (const h of running.splice(0)) await h.stop();
});

async function harness(options: RouteHarnessOptions = {}): Promise<RouteHarness> {
  const h = await startRouteHarness({ routeIdleMs: IDLE, ...options });
  running.push(h);
  return h;
}

async function setHosts(h: RouteHarness, hosts: Record<string, { healthy: boolean; draining?: boolean }>): Promise<void> {
  for (const [host, s] of Object.entries(hosts)) okReply(await h.call("host.set", { host, ...s }));
}

const types = (h: RouteHarness, route?: string) => h.events("route", route).map((e) => e.event.type);

describe("host.set and host.list", () => {
  it("records a change only, lists set hosts sorted by code unit with their active leases", async () => {
    const h = await harness();
    expect(okReply(await h.call("host.set", { host: "b", healthy: true }))).toEqual({ host: "b" });
    okReply(await h.call("host.set", { host: "b", healthy: true, draining: false }));
    okReply(await h.call("host.set", { host: "a", healthy: false }));
    okReply(await h.call("host.set", { host: "a", healthy: false }));
    okReply(await h.call("host.set", { host: "Z", healthy: true, draining: true }));
    expect(h.events("host").map((e) => [e.event.id, e.event.data])).toEqual([
      ["b", { healthy: true, draining: false, maxLeases: null }],
      ["a", { healthy: false, draining: false, maxLeases: null }],
      ["Z", { healthy: true, draining: true, maxLeases: null }],
    ]);
    okReply(await h.call("route.acquire", { route: "r1", fp: "", model: "m", candidates: ["b"] }));
    okReply(await h.call("route.acquire", { route: "r2", fp: "", model: "m", candidates: ["b"] }));
    okReply(await h.call("route.move", { route: "r2", fp: "x", model: "m", host: "a" }));
    expect(okReply(await h.call("host.list", {}))).toEqual({
      hosts: [
        { host: "Z", healthy: true, draining: true, maxLeases: null, active: 0, load: null },
        { host: "a", healthy: false, draining: false, maxLeases: null, active: 1, load: null },
        { host: "b", healthy: true, draining: false, maxLeases: null, active: 2, load: null },
      ],
    });
  });
});

describe("route.acquire through the endpoint", () => {
  it("follows the seed's order with live host state: place, reuse, inherit, replace an unhealthy lease", async () => {
    const h = await harness();
    await setHosts(h, { a: { healthy: true }, b: { healthy: true } });
    const c = ["a", "b"];
    expect(okReply(await h.call("route.acquire", { route: "r", fp: "", model: "m", candidates: c }))).toEqual({ host: "a", reused: false });
    expect(okReply(await h.call("route.acquire", { route: "r", fp: "", model: "m", candidates: c }))).toEqual({ host: "a", reused: true });
    // Inherits the route's host although b has fewer leases.
    expect(okReply(await h.call("route.acquire", { route: "r", fp: "c1", model: "m", candidates: c }))).toEqual({
      host: "a",
      reused: true,
    });
    // Another route goes to the least loaded host, counting every route's leases.
    expect(okReply(await h.call("route.acquire", { route: "s", fp: "", model: "m", candidates: c }))).toEqual({ host: "b", reused: false });
    await setHosts(h, { a: { healthy: false } });
    expect(okReply(await h.call("route.acquire", { route: "r", fp: "c1", model: "m", candidates: c }))).toEqual({
      host: "b",
      reused: false,
    });
    const last = h.events("route", "r").at(-1)!;
    expect(last.event).toMatchObject({
      type: "RouteLeasePlaced",
      data: { fp: "c1", model: "m", host: "b", from: "a", reason: "unhealthy", reused: false },
    });
  });

  it("records the candidates of a failed acquire (and only new ones), so a later pin accepts them", async () => {
    const h = await harness();
    const failed = await h.call("route.acquire", { route: "r", fp: "", model: "m", candidates: ["x", "y"], requestId: "req-1" });
    expect(codeOf(failed)).toBe("NO_HOST");
    expect(h.events("route", "r").map((e) => [e.event.type, e.event.data, e.event.requestId])).toEqual([
      ["RouteCandidatesSeen", { seen: ["x", "y"] }, "req-1"],
    ]);
    expect(codeOf(await h.call("route.acquire", { route: "r", fp: "", model: "m", candidates: ["y", "x"] }))).toBe("NO_HOST");
    expect(types(h, "r")).toEqual(["RouteCandidatesSeen"]);
    okReply(await h.call("route.pin", { route: "r", host: "y" }));
    // Pinned to an unhealthy host: PINNED_DOWN, and its new candidate is still recorded.
    expect(codeOf(await h.call("route.acquire", { route: "r", fp: "", model: "m", candidates: ["z"] }))).toBe("PINNED_DOWN");
    expect(h.events("route", "r").at(-1)!.event).toMatchObject({ type: "RouteCandidatesSeen", data: { seen: ["z"] } });
  });

  it("decides a failed acquire again when repeated with its requestId, and succeeds once a host is up", async () => {
    const h = await harness();
    const request = { route: "r", fp: "c1", model: "m", candidates: ["a"], requestId: "retry-me" };
    expect(codeOf(await h.call("route.acquire", request))).toBe("NO_HOST");
    await setHosts(h, { a: { healthy: true } });
    expect(okReply(await h.call("route.acquire", request))).toEqual({ host: "a", reused: false });
    expect(types(h, "r")).toEqual(["RouteCandidatesSeen", "RouteLeasePlaced"]);
  });

  it("answers a repeated successful acquire with the first reply and changes nothing, also across a restart", async () => {
    const h = await harness();
    await setHosts(h, { a: { healthy: true }, b: { healthy: true } });
    const request = { route: "r", fp: "c1", model: "m", candidates: ["a", "b"], requestId: "once" };
    const first = okReply(await h.call("route.acquire", request));
    expect(first).toEqual({ host: "a", reused: false });
    await setHosts(h, { a: { healthy: false } });
    expect(okReply(await h.call("route.acquire", request))).toEqual(first);
    await h.restart();
    expect(okReply(await h.call("route.acquire", request))).toEqual(first);
    expect(types(h, "r")).toEqual(["RouteLeasePlaced"]);
    // A reuse with a requestId is recorded, so its repeat answers the same after the host fails.
    await setHosts(h, { a: { healthy: true } });
    const reuse = { ...request, requestId: "reuse-1" };
    expect(okReply(await h.call("route.acquire", reuse))).toEqual({ host: "a", reused: true });
    expect(h.events("route", "r").at(-1)!.event).toMatchObject({ type: "RouteLeaseTouched", requestId: "reuse-1" });
    await setHosts(h, { a: { healthy: false } });
    expect(okReply(await h.call("route.acquire", reuse))).toEqual({ host: "a", reused: true });
  });

  it("coalesces last-use updates: at most one event per routeIdleMs / 100 for a hot conversation", async () => {
    const h = await harness();
    await setHosts(h, { a: { healthy: true } });
    const request = { route: "r", fp: "c1", model: "m", candidates: ["a"] };
    okReply(await h.call("route.acquire", request));
    const step = IDLE / 100 / 10;
    for (let i = 0; i < 35; i++) {
      h.clock.advance(step);
      expect(okReply(await h.call("route.acquire", request))).toEqual({ host: "a", reused: true });
    }
    // 35 reuses over 3.5 coalescing periods: one touch per period.
    expect(types(h, "r")).toEqual(["RouteLeasePlaced", "RouteLeaseTouched", "RouteLeaseTouched", "RouteLeaseTouched"]);
    const lease = okReply<{ leases: { lastUsedAt: string }[] }>(await h.call("route.get", { route: "r" })).leases[0]!;
    const stale = h.clock.now() - Date.parse(lease.lastUsedAt);
    expect(stale).toBeGreaterThanOrEqual(0);
    expect(stale).toBeLessThan(IDLE / 100);
  });

  it("enters a route's commands into its actor in arrival order although acquire first waits for the tables", async () => {
    const h = await harness();
    await setHosts(h, { a: { healthy: true }, b: { healthy: true } });
    okReply(await h.call("route.candidates", { route: "r", hosts: ["a", "b"] }));
    const acquiring = h.call("route.acquire", { route: "r", fp: "c1", model: "m", candidates: ["a", "b"] });
    const pinning = h.call("route.pin", { route: "r", host: "b" });
    expect(okReply(await acquiring)).toEqual({ host: "a", reused: false });
    okReply(await pinning);
    expect(h.events("route", "r").at(-1)!.event.data).toEqual({ host: "b", displaced: [{ fp: "c1", model: "m", host: "a" }] });
  });
});

describe("pins, unpin, release, move", () => {
  it("appends nothing for commands that change nothing", async () => {
    const h = await harness();
    await setHosts(h, { a: { healthy: true } });
    expect(okReply(await h.call("route.unpin", { route: "r" }))).toEqual({});
    expect(okReply(await h.call("route.release", { route: "r" }))).toEqual({ released: 0 });
    expect(okReply(await h.call("route.candidates", { route: "r", hosts: [] }))).toEqual({});
    expect(codeOf(await h.call("route.pin", { route: "r", host: "a" }))).toBe("UNKNOWN_HOST");
    expect(h.events("route")).toEqual([]);
    okReply(await h.call("route.candidates", { route: "r", hosts: ["a"] }));
    okReply(await h.call("route.candidates", { route: "r", hosts: ["a"] }));
    okReply(await h.call("route.pin", { route: "r", host: "a" }));
    okReply(await h.call("route.pin", { route: "r", host: "a" }));
    expect(types(h, "r")).toEqual(["RouteCandidatesSeen", "RoutePinned"]);
  });

  it("pin displaces leases on other hosts, unpin keeps leases, release counts and keeps the pin, move answers from", async () => {
    const h = await harness();
    await setHosts(h, { a: { healthy: true }, b: { healthy: true } });
    const at = (fp: string, candidates: string[]) => h.call("route.acquire", { route: "r", fp, model: "m", candidates });
    expect(okReply(await at("c1", ["a"]))).toMatchObject({ host: "a" });
    expect(okReply(await at("c2", ["b"]))).toMatchObject({ host: "b" });
    okReply(await h.call("route.pin", { route: "r", host: "b" }));
    expect(okReply(await h.call("route.get", { route: "r" }))).toMatchObject({ pinned: "b", leases: [{ fp: "c2", host: "b" }] });
    expect(okReply(await at("c1", ["a"]))).toEqual({ host: "b", reused: false });
    okReply(await h.call("route.unpin", { route: "r" }));
    const got = okReply<{ pinned: string; leases: unknown[] }>(await h.call("route.get", { route: "r" }));
    expect(got.pinned).toBe("");
    expect(got.leases).toHaveLength(2);
    expect(okReply(await h.call("route.move", { route: "r", fp: "c1", model: "m", host: "a" }))).toEqual({ from: "b", host: "a" });
    expect(okReply(await h.call("route.move", { route: "r", fp: "new", model: "m", host: "q" }))).toEqual({ from: "", host: "q" });
    okReply(await h.call("route.pin", { route: "r", host: "q" })); // q was seen through the move
    okReply(await h.call("route.candidates", { route: "r", hosts: ["a"] }));
    okReply(await h.call("route.unpin", { route: "r" }));
    okReply(await h.call("route.pin", { route: "r", host: "a" }));
    expect(okReply(await h.call("route.release", { route: "r" }))).toEqual({ released: 0 });
    okReply(await h.call("route.move", { route: "r", fp: "c1", model: "m", host: "a" }));
    okReply(await h.call("route.move", { route: "r", fp: "c2", model: "m", host: "b" }));
    expect(okReply(await h.call("route.release", { route: "r" }))).toEqual({ released: 2 });
    expect(okReply(await h.call("route.get", { route: "r" }))).toEqual({ pinned: "a", leases: [] });
  });
});

describe("idle expiry", () => {
  it("expires leases unused for more than routeIdleMs, one event each; pins never expire; idle leases are reused until swept", async () => {
    const h = await harness();
    await setHosts(h, { a: { healthy: true }, b: { healthy: true } });
    const at = (route: string, fp: string) => h.call("route.acquire", { route, fp, model: "m", candidates: ["a", "b"] });
    okReply(await at("r1", "c1"));
    okReply(await at("r1", "c2"));
    okReply(await at("r2", ""));
    okReply(await h.call("route.pin", { route: "r2", host: okReply<{ host: string }>(await at("r2", "")).host }));
    h.clock.advance(IDLE / 2);
    okReply(await at("r1", "c2")); // keeps c2 alive
    h.clock.advance(IDLE / 2);
    await h.sweep();
    expect(h.events("route").filter((e) => e.event.type === "RouteLeaseExpired")).toEqual([]); // exactly IDLE is not more than IDLE
    h.clock.advance(1);
    // Idle but not yet swept: still reused (as in the seed), and that use keeps it.
    expect(okReply(await at("r2", ""))).toMatchObject({ reused: true });
    await h.sweep();
    const expired = h.events("route").filter((e) => e.event.type === "RouteLeaseExpired");
    expect(expired.map((e) => [e.event.id, e.event.data])).toEqual([["r1", { fp: "c1", model: "m", host: expect.any(String) }]]);
    h.clock.advance(IDLE + 1);
    await h.sweep();
    await h.sweep();
    const all = h.events("route").filter((e) => e.event.type === "RouteLeaseExpired");
    expect(all.map((e) => `${e.event.id}/${(e.event.data as { fp: string }).fp}`).sort()).toEqual(["r1/c1", "r1/c2", "r2/"]);
    expect(okReply(await h.call("route.snapshot", {}))).toEqual({ leases: [] });
    expect(okReply<{ pinned: string }>(await h.call("route.get", { route: "r2" })).pinned).not.toBe("");
  });

  it("leaves a lease alone when the actor finds it used since the table said it was idle", async () => {
    const h = await harness();
    await setHosts(h, { a: { healthy: true } });
    okReply(await h.call("route.acquire", { route: "r", fp: "", model: "m", candidates: ["a"] }));
    const table = new RouteTable(projectionOf(h.log, h.subjects, routeLogic({ routeIdleMs: IDLE, chooser: chooserNamed("least-loaded") })));
    await table.start();
    // The table is asked at an instant when the lease looks idle; the actor decides at the clock's instant.
    expect(await expireIdleLeases(h.runtime, table, T0 + IDLE + 1, { routeIdleMs: IDLE })).toBe(0);
    expect(types(h, "r")).toEqual(["RouteLeasePlaced"]);
    h.clock.advance(IDLE + 1);
    expect(await expireIdleLeases(h.runtime, table, h.clock.now(), { routeIdleMs: IDLE })).toBe(1);
    await table.stop();
  });
});

describe("reads", () => {
  it("sort route.get by fp then model and route.snapshot by route, fp, model, by UTF-16 code units", async () => {
    const h = await harness();
    await setHosts(h, { a: { healthy: true } });
    const keys = [
      ["b", "x", "m"],
      ["B", "x", "m"],
      ["b", "", "n"],
      ["b", "", "M"],
      ["é", "y", "m"],
      ["b", "Z", "m"],
    ];
    for (const [route, fp, model] of keys) okReply(await h.call("route.acquire", { route, fp, model, candidates: ["a"] }));
    const snap = okReply<{ leases: { route: string; fp: string; model: string; host: string; createdAt: string; lastUsedAt: string }[] }>(
      await h.call("route.snapshot", {}),
    );
    expect(snap.leases.map((l) => [l.route, l.fp, l.model])).toEqual([
      ["B", "x", "m"],
      ["b", "", "M"],
      ["b", "", "n"],
      ["b", "Z", "m"],
      ["b", "x", "m"],
      ["é", "y", "m"],
    ]);
    expect(snap.leases[0]).toEqual({
      route: "B",
      fp: "x",
      model: "m",
      host: "a",
      createdAt: new Date(T0).toISOString(),
      lastUsedAt: new Date(T0).toISOString(),
    });
    const got = okReply<{ leases: { fp: string; model: string }[] }>(await h.call("route.get", { route: "b" }));
    expect(got.leases.map((l) => [l.fp, l.model])).toEqual([
      ["", "M"],
      ["", "n"],
      ["Z", "m"],
      ["x", "m"],
    ]);
    expect(okReply(await h.call("route.get", { route: "never" }))).toEqual({ pinned: "", leases: [] });
  });
});

describe("input validation", () => {
  it("refuses malformed requests with BAD_REQUEST and appends nothing", async () => {
    const h = await harness();
    const bad: [string, unknown][] = [
      ["route.acquire", { route: "r", model: "m", candidates: [] }],
      ["route.acquire", { route: "r", fp: "", model: "m" }],
      ["route.acquire", { route: "", fp: "", model: "m", candidates: [] }],
      ["route.acquire", { route: "r", fp: "", model: "m", candidates: [""] }],
      ["route.acquire", { route: "r", fp: "", model: "m", candidates: "a" }],
      ["route.acquire", '{"route":"\\ud800","fp":"","model":"m","candidates":[]}'],
      ["route.acquire", { route: "r", fp: "x".repeat(257), model: "m", candidates: [] }],
      ["route.move", { route: "r", fp: "", model: "m", host: "" }],
      ["route.pin", { route: "r" }],
      ["route.candidates", { route: "r", hosts: [1] }],
      ["host.set", { host: "a" }],
      ["host.set", { host: "a", healthy: "yes" }],
      ["host.set", { host: "a", healthy: true, draining: 1 }],
      ["route.get", "not json"],
      ["host.list", "[]"],
    ];
    for (const [op, body] of bad) expect(codeOf(await h.call(op, body)), `${op} ${JSON.stringify(body)}`).toBe("BAD_REQUEST");
    expect(h.events()).toEqual([]);
    // Identifiers with subject-hostile characters are fine.
    okReply(await h.call("host.set", { host: "gpu.*>/ 1", healthy: true }));
    expect(okReply(await h.call("route.acquire", { route: "a.b>*", fp: "ünï", model: "", candidates: ["gpu.*>/ 1"] }))).toEqual({
      host: "gpu.*>/ 1",
      reused: false,
    });
  });
});

describe("restart", () => {
  it("rebuilds leases, pins and the whole seen set from the log", async () => {
    const h = await harness();
    await setHosts(h, { a: { healthy: true }, b: { healthy: true } });
    okReply(await h.call("route.acquire", { route: "r", fp: "", model: "m", candidates: ["a", "b", "c"] }));
    okReply(await h.call("route.pin", { route: "r", host: "a" }));
    okReply(await h.call("route.candidates", { route: "s", hosts: ["only-seen"] }));
    const before = okReply(await h.call("route.snapshot", {}));
    await h.restart();
    expect(okReply(await h.call("route.snapshot", {}))).toEqual(before);
    expect(okReply(await h.call("route.get", { route: "r" }))).toMatchObject({ pinned: "a" });
    expect(okReply(await h.call("route.acquire", { route: "r", fp: "", model: "m", candidates: ["b"] }))).toEqual({
      host: "a",
      reused: true,
    });
    okReply(await h.call("route.pin", { route: "r", host: "c" }));
    okReply(await h.call("route.pin", { route: "s", host: "only-seen" }));
    expect(okReply(await h.call("host.list", {}))).toMatchObject({
      hosts: [
        { host: "a", active: 0 },
        { host: "b", active: 0 },
      ],
    });
  });
});
