/**
 * The hosts' least-loaded order: the ordered set against a plain sort, and
 * the route table keeping it equal to its own per-host counts through random
 * histories of placements, moves, pins, releases and expiries.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeEvent } from "../../src/events/envelope.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { chooserNamed } from "../../src/route/chooser.ts";
import { routeLogic } from "../../src/route/logic.ts";
import { HostLoadOrder } from "../../src/host/load-order.ts";
import { leaseKey } from "../../src/route/state.ts";
import { compareCodeUnits } from "../../src/contract/code-units.ts";
import { RouteTable } from "../../src/route/table.ts";
import { projectionOf } from "../support/projections.ts";
import { T0 } from "../support/route-given.ts";

const HOSTS = ["a", "b", "B", "é", "h1", "h10", "h2", "gpu-7"];

/** Every host of `loads` sorted as the least-loaded chooser ranks them. */
function sortedPlainly(loads: ReadonlyMap<string, number>): { load: number; name: string }[] {
  return [...loads].map(([name, load]) => ({ load, name })).sort((x, y) => x.load - y.load || compareCodeUnits(x.name, y.name));
}

describe("HostLoadOrder", () => {
  it("iterates as a sort by (load, name) after any includes and load changes", () => {
    const op = fc.record({ include: fc.boolean(), host: fc.constantFrom(...HOSTS), load: fc.integer({ min: 0, max: 5 }) });
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 80 }), (ops) => {
        const order = new HostLoadOrder();
        const plain = new Map<string, number>();
        for (const o of ops) {
          if (o.include) {
            order.include(o.host, o.load);
            if (!plain.has(o.host)) plain.set(o.host, o.load);
          } else {
            order.set(o.host, o.load);
            plain.set(o.host, o.load);
          }
          expect([...order]).toEqual(sortedPlainly(plain));
          expect(order.size).toBe(plain.size);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("RouteTable.loadOrder", () => {
  const subjects = new Subjects("p");
  const route = fc.constantFrom("r1", "r2", "r3");
  const key = fc.record({ fp: fc.constantFrom("", "c1", "c2"), model: fc.constantFrom("m", "n") });
  const host = fc.constantFrom(...HOSTS);
  const event = fc.oneof(
    { weight: 5, arbitrary: fc.record({ type: fc.constant("place" as const), route, key, host }) },
    { weight: 2, arbitrary: fc.record({ type: fc.constant("expire" as const), route, key }) },
    { weight: 1, arbitrary: fc.record({ type: fc.constant("release" as const), route }) },
    { weight: 1, arbitrary: fc.record({ type: fc.constant("pin" as const), route, host }) },
    { weight: 1, arbitrary: fc.record({ type: fc.constant("include" as const), hosts: fc.subarray(HOSTS) }) },
  );

  it("holds every included or loaded host in (active leases, name) order after every event", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(event, { minLength: 1, maxLength: 60 }), async (events) => {
        const log = new MemoryEventLog();
        const routes = new RouteTable(
          projectionOf(log, subjects, routeLogic({ routeIdleMs: 1000, chooser: chooserNamed("least-loaded") })),
        );
        await routes.start();
        // The leases each route holds, as the test wrote them, so every event names leases that exist.
        const held = new Map<string, Map<string, { fp: string; model: string; host: string }>>();
        const included = new Set<string>();
        const put = (id: string, type: string, data: Record<string, unknown>) =>
          log.appendRaw(
            subjects.event("route", id),
            encodeEvent({ type, v: 1, at: new Date(T0).toISOString(), kind: "route", id, data } as never),
          );
        for (const e of events) {
          if (e.type === "include") {
            routes.includeHosts(e.hosts);
            for (const h of e.hosts) included.add(h);
            continue;
          }
          const leases = held.get(e.route) ?? new Map<string, { fp: string; model: string; host: string }>();
          held.set(e.route, leases);
          if (e.type === "place") {
            put(e.route, "RouteLeasePlaced", { ...e.key, host: e.host, from: "", reason: "new", reused: false });
            leases.set(leaseKey(e.key.fp, e.key.model), { ...e.key, host: e.host });
          } else if (e.type === "expire") {
            const lease = leases.get(leaseKey(e.key.fp, e.key.model));
            if (lease === undefined) continue;
            put(e.route, "RouteLeaseExpired", lease);
            leases.delete(leaseKey(e.key.fp, e.key.model));
          } else if (e.type === "release") {
            put(e.route, "RouteReleased", { released: [...leases.values()] });
            leases.clear();
          } else {
            const displaced = [...leases.values()].filter((l) => l.host !== e.host);
            put(e.route, "RoutePinned", { host: e.host, displaced });
            for (const l of displaced) leases.delete(leaseKey(l.fp, l.model));
          }
          for (const l of [...held.values()].flatMap((m) => [...m.values()])) included.add(l.host);
          const expected = new Map<string, number>();
          for (const h of included) expected.set(h, routes.activeOn(h));
          expect([...routes.loadOrder]).toEqual(sortedPlainly(expected));
        }
        await routes.stop();
      }),
      { numRuns: 100 },
    );
  });
});
