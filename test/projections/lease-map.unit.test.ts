/**
 * The route's lease map against a plain Map: every version answers as the
 * Map did at that point (updates never change an earlier version), and a
 * snapshot's copy of it, or an older snapshot's plain Map, comes back whole.
 */
import { deserialize, serialize } from "node:v8";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LeaseMap } from "../../src/route/lease-map.ts";
import { evolveRoute, initialRouteState, leaseKey, reviveRouteState, type RouteState } from "../../src/route/state.ts";
import type { HistoryEntry } from "../../src/events/envelope.ts";

type Op = { readonly set: string; readonly value: number } | { readonly remove: readonly string[] };

// Few distinct keys, so that sets overwrite, removals hit, and buckets fill and empty.
const key = fc.integer({ min: 0, max: 150 }).map((n) => `k${n}`);
const op: fc.Arbitrary<Op> = fc.oneof(fc.record({ set: key, value: fc.integer() }), fc.record({ remove: fc.array(key, { maxLength: 6 }) }));

function expectSame(map: LeaseMap<number>, model: ReadonlyMap<string, number>): void {
  expect(map.size).toBe(model.size);
  expect(new Map(map.entries())).toEqual(model);
  expect([...map.keys()].sort()).toEqual([...model.keys()].sort());
  expect([...map.values()].sort()).toEqual([...model.values()].sort());
  expect(new Map(map)).toEqual(model);
  for (const k of ["k0", "k7", "k150", "absent"]) {
    expect(map.get(k)).toBe(model.get(k));
    expect(map.has(k)).toBe(model.has(k));
  }
}

describe("LeaseMap", () => {
  it("answers as a Map would after any updates, and every earlier version still answers as it did", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const versions: [LeaseMap<number>, Map<string, number>][] = [[LeaseMap.empty(), new Map()]];
        for (const o of ops) {
          const [map, model] = versions.at(-1)!;
          const next = new Map(model);
          if ("set" in o) next.set(o.set, o.value);
          else for (const k of o.remove) next.delete(k);
          const updated = "set" in o ? map.with(o.set, o.value) : map.without(o.remove);
          // Removing nothing it holds gives the map itself back: indexes compare by identity.
          if (!("set" in o) && o.remove.every((k) => !model.has(k))) expect(updated).toBe(map);
          versions.push([updated, next]);
        }
        for (const [map, model] of versions) expectSame(map, model);
      }),
      { numRuns: 200 },
    );
  });

  it("comes back whole from a snapshot's structured serialization, and from an older snapshot's plain Map", () => {
    const model = new Map(Array.from({ length: 500 }, (_, i) => [`k${i}`, i] as [string, number]));
    const map = LeaseMap.from(model);
    expectSame(LeaseMap.revive(deserialize(serialize(map))), model);
    expectSame(LeaseMap.revive(model), model);
    expect(() => LeaseMap.revive({ buckets: "no" })).toThrow(TypeError);
  });

  it("revives a route state from a snapshot, so its leases answer and update as before", () => {
    let state: RouteState = initialRouteState("r");
    for (let i = 0; i < 100; i++) {
      const entry = {
        seq: i + 1,
        event: {
          type: "RouteLeasePlaced",
          v: 1,
          at: "2026-12-02T00:00:00.000Z",
          data: { fp: `c${i}`, model: "m", host: `h${i % 3}`, from: "", reason: "new", reused: false },
        },
      } as HistoryEntry;
      state = evolveRoute(state, entry);
    }
    const revived = reviveRouteState(deserialize(serialize(state)) as RouteState);
    expect(revived.leases.size).toBe(100);
    expect(revived.leases.get(leaseKey("c42", "m"))?.host).toBe("h0");
    expect(revived.leases.without([leaseKey("c42", "m")]).size).toBe(99);
    expect(reviveRouteState(state)).toBe(state);
  });
});
