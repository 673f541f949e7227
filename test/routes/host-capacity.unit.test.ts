/**
 * Host capacity in the deciders (pure): the host admits a new lease while its
 * active route leases plus the admissions that may still become leases stay
 * under the cap; the route decider skips full hosts, asks a capped host for
 * an admission, uses one only as the route's very next event, and settles an
 * unused one by taking that place (lapse).
 */
import { describe, expect, it } from "vitest";
import { decideHost, openAdmissions } from "../../src/host/decide.ts";
import type { AdmitLease } from "../../src/host/commands.ts";
import type { HistoryEntry } from "../../src/events/envelope.ts";
import { evolveHost, initialHostState, type HostHealth, type HostState } from "../../src/host/state.ts";
import { HostLoadOrder } from "../../src/host/load-order.ts";
import { acquire, chosen, givenRoute, placed, seen, settingsWith, T0 } from "../support/route-given.ts";
import { specEvent } from "../support/event-builders.ts";

const hostEntry = (seq: number, type: string, data: Record<string, unknown>): HistoryEntry => specEvent(seq, "host", "h", type, data, T0);

const capped = (maxLeases: number | null, admissions: HostState["admissions"] = []): HostState => ({
  host: "h",
  set: true,
  healthy: true,
  draining: false,
  maxLeases,
  admissions,
});

const admit = (active: number, settled: number[] = [], counted: number[] = [], routeSeq = 7): AdmitLease => ({
  op: "admit",
  route: "r",
  fp: "",
  model: "m",
  routeSeq,
  active,
  settled,
  counted,
});

const open = (seq: number, route = "x") => ({ seq, route, fp: "", model: "m", routeSeq: 1, atMs: T0 });

describe("the host's admission", () => {
  it("admits under the cap, counting active leases and every admission not known to be settled", () => {
    expect(decideHost(capped(2), admit(1))).toEqual({
      outcome: "append",
      type: "HostLeaseAdmitted",
      data: { route: "r", fp: "", model: "m", routeSeq: 7, closed: [] },
    });
    // One active and one open admission fill a cap of 2.
    expect(decideHost(capped(2, [open(5)]), admit(1, [], [5]))).toMatchObject({
      outcome: "reject",
      rejection: { code: "NO_HOST", details: { full: ["h"] } },
    });
    // Settled, the admission is counted among the active leases (or never will be) and is closed by the next admission.
    expect(decideHost(capped(2, [open(5)]), admit(1, [5, 99], [5]))).toMatchObject({ outcome: "append", data: { closed: [5] } });
    expect(decideHost(capped(0), admit(0))).toMatchObject({ outcome: "reject" });
  });

  it("asks for a new count when the host's open admissions are not those the count was made against", () => {
    // Counted before admission 5 was closed by another instance (whose route table already held its lease):
    // the stale count (0 active, admission 5 open) would let a fourth lease onto a host capped at 3.
    const stale = { outcome: "reply", reply: { host: "h", admission: 0, stale: true } };
    expect(decideHost(capped(3, [open(6), open(8)]), admit(0, [], [5, 6, 8]))).toEqual(stale);
    // Counted before admission 9 was recorded.
    expect(decideHost(capped(3, [open(6), open(9)]), admit(1, [], [6]))).toEqual(stale);
    // The same open admissions, in any order: the count stands.
    expect(decideHost(capped(3, [open(6), open(8)]), admit(0, [], [8, 6]))).toMatchObject({ outcome: "append" });
  });

  it("lets everything through on an uncapped host without recording anything", () => {
    expect(decideHost(capped(null, [open(5)]), admit(100))).toEqual({ outcome: "reply", reply: { host: "h", admission: 0 } });
  });

  it("folds admissions in and closes the settled ones; host.set keeps them and sets the whole state", () => {
    let s = initialHostState("h");
    s = evolveHost(s, hostEntry(1, "HostStateSet", { healthy: true, draining: false, maxLeases: 2 }));
    s = evolveHost(s, hostEntry(2, "HostLeaseAdmitted", { route: "a", fp: "", model: "m", routeSeq: 0, closed: [] }));
    s = evolveHost(s, hostEntry(3, "HostLeaseAdmitted", { route: "b", fp: "x", model: "m", routeSeq: 4, closed: [] }));
    expect(s.admissions.map((a) => a.seq)).toEqual([2, 3]);
    expect(openAdmissions(s, [2])).toBe(1);
    s = evolveHost(s, hostEntry(4, "HostLeaseAdmitted", { route: "c", fp: "", model: "m", routeSeq: 9, closed: [2] }));
    expect(s.admissions.map((a) => [a.seq, a.route, a.routeSeq])).toEqual([
      [3, "b", 4],
      [4, "c", 9],
    ]);
    s = evolveHost(s, hostEntry(5, "HostStateSet", { healthy: true, draining: false }));
    expect(s).toMatchObject({ maxLeases: null, admissions: [{ seq: 3 }, { seq: 4 }] });
    // A change of the cap alone is a change; the same whole state is not.
    expect(decideHost(s, { op: "set", healthy: true, draining: false, maxLeases: null })).toMatchObject({ outcome: "reply" });
    expect(decideHost(s, { op: "set", healthy: true, draining: false, maxLeases: 3 })).toMatchObject({
      outcome: "append",
      data: { maxLeases: 3 },
    });
  });
});

describe("the route decider and capacity", () => {
  const hosts = (caps: Record<string, number | null>) =>
    new Map<string, HostHealth>(Object.entries(caps).map(([h, maxLeases]) => [h, { healthy: true, draining: false, maxLeases }]));

  it.each(["least-loaded", "rendezvous"] as const)("%s: skips full hosts and names them when all are full", (chooser) => {
    const given = givenRoute([seen("a", "b")]);
    const settings = settingsWith(chooser);
    const loads = new Map([
      ["a", 2],
      ["b", 1],
    ]);
    // b is full by load, a uncapped: a new lease goes to a whatever the chooser prefers.
    given
      .when(acquire("", "m", { candidates: ["b", "a"], hosts: hosts({ a: null, b: 1 }), loads }), T0, settings)
      .thenRecords("RouteLeasePlaced", chosen("", "m", "a", { chooser }));
    given
      .when(acquire("", "m", { candidates: ["b", "a", "b"], hosts: hosts({ a: 2, b: 1 }), loads }), T0, settings)
      .thenRejects("NO_HOST", { full: ["a", "b"] });
    // Named sorted by code unit, whatever order the candidates came in.
    given
      .when(acquire("", "m", { candidates: ["c", "b", "Z", "a"], hosts: hosts({ a: 2, b: 1, c: 0, Z: 0 }), loads }), T0, settings)
      .thenRejects("NO_HOST", { full: ["Z", "a", "b", "c"] });
    // An admission refused this request counts as full too.
    given
      .when(acquire("", "m", { candidates: ["a"], hosts: hosts({ a: 5 }), loads, full: new Set(["a"]) }), T0, settings)
      .thenRejects("NO_HOST", { full: ["a"] });
  });

  it("skips a host an admission refused for this request also when it walks the hosts' load order (a long list)", () => {
    // A long list sent again (frozen, as requests give) with the route table's load order: the decider walks the order.
    const fleet = Object.freeze(Array.from({ length: 40 }, (_, i) => `gpu-${i}`));
    const loads = new Map(fleet.map((h) => [h, 2]));
    loads.set("gpu-5", 0);
    loads.set("gpu-7", 1);
    const order = new HostLoadOrder();
    for (const h of fleet) order.set(h, loads.get(h)!);
    const all = hosts(Object.fromEntries(fleet.map((h) => [h, null])));
    const given = givenRoute([seen(...fleet)]);
    given.when(acquire("", "m", { candidates: fleet, hosts: all, loads, order })).thenRecords("RouteLeasePlaced", chosen("", "m", "gpu-5"));
    given
      .when(acquire("", "m", { candidates: fleet, hosts: all, loads, order, full: new Set(["gpu-5"]) }))
      .thenRecords("RouteLeasePlaced", chosen("", "m", "gpu-7"));
  });

  it("asks a capped host for an admission bound to the route's last sequence, and places with it only there", () => {
    const given = givenRoute([seen("a")]);
    const lastSeq = given.state.lastSeq;
    expect(lastSeq).toBeGreaterThan(0);
    given.when(acquire("", "m", { candidates: ["a"], hosts: hosts({ a: 1 }) })).thenReplies({ admit: "a", routeSeq: lastSeq });
    given
      .when(acquire("", "m", { candidates: ["a"], hosts: hosts({ a: 1 }), admission: { host: "a", seq: 42, routeSeq: lastSeq } }))
      .thenRecords("RouteLeasePlaced", chosen("", "m", "a", { admission: 42 }));
    // The route moved since: the admission is void, a new one is needed.
    const moved = givenRoute([seen("a"), placed("x", "m", "a")]);
    moved
      .when(acquire("", "m", { candidates: ["a"], hosts: hosts({ a: 5 }), admission: { host: "a", seq: 42, routeSeq: lastSeq } }))
      .thenReplies({ admit: "a", routeSeq: moved.state.lastSeq });
  });

  it("lapses an unused admission only while the route is still where it was granted", () => {
    const given = givenRoute([seen("a")]);
    given
      .when({ op: "lapse", host: "a", admission: 42, routeSeq: given.state.lastSeq })
      .thenRecords("RouteAdmissionLapsed", { host: "a", admission: 42 });
    given.when({ op: "lapse", host: "a", admission: 42, routeSeq: given.state.lastSeq - 1 }).thenReplies({});
  });
});
