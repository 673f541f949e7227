/**
 * The selection index re-classifies a proxy at its next boundary, the
 * earliest of them: the first of several leases (folded or this instance's
 * unfolded grants) to expire, or the end of a global cooldown, whatever order
 * they were recorded or added in. The property (proxy-selection-index.sim.test.ts)
 * rarely lines these up; here they are by hand.
 */
import { describe, expect, it } from "vitest";
import { ProxySelectionIndex } from "../../src/proxy/selection-index.ts";
import { initialProxyState, type ProxyLease, type ProxyState } from "../../src/proxy/state.ts";

const T = 1_000_000;

function lease(id: string, expiresAtMs: number): [string, ProxyLease] {
  return [id, { id, target: "", ttlMs: 1, expiresAt: new Date(expiresAtMs).toISOString(), expiresAtMs }];
}

function indexOf(state: ProxyState): ProxySelectionIndex {
  return new ProxySelectionIndex({ stateOf: () => state, states: () => [state] });
}

const registered = (maxLeases: number): ProxyState => ({
  ...initialProxyState("p"),
  registration: { maxLeases, latencyMs: 0, labels: {}, healthy: true },
});

const full = { stats: { considered: 1, unhealthy: 0, inCooldown: 0, atCapacity: 1 }, eligible: [] };
const open = { stats: { considered: 1, unhealthy: 0, inCooldown: 0, atCapacity: 0 }, eligible: ["p"] };

describe("ProxySelectionIndex boundaries", () => {
  it("opens a full proxy when its first lease expires, in whichever order the leases were recorded", () => {
    for (const leases of [
      [lease("early", T + 10), lease("late", T + 40)],
      [lease("late", T + 40), lease("early", T + 10)],
    ]) {
      const index = indexOf({ ...registered(2), leases: new Map(leases) });
      expect(index.rank({}, "", T, 5)).toEqual(full);
      expect(index.rank({}, "", T + 10, 5)).toEqual(open);
    }
  });

  it("does the same for the first of its latest lease and this instance's unfolded grants", () => {
    for (const [first, second] of [
      [T + 40, T + 10],
      [T + 10, T + 40],
    ] as const) {
      const index = indexOf({ ...registered(3), leases: new Map([lease("late", T + 60)]) });
      // Added before the index is first evaluated: the first rank classifies the proxy with both.
      index.addUnfolded("p", "u1", first);
      index.addUnfolded("p", "u2", second);
      expect(index.rank({}, "", T, 5)).toEqual(full);
      expect(index.rank({}, "", T + 10, 5)).toEqual(open);
    }
  });

  it("counts an unfolded grant until, not at, its expiry", () => {
    const index = indexOf(registered(1));
    index.addUnfolded("p", "u", T + 10);
    expect(index.rank({}, "", T + 9, 5)).toEqual(full);
    expect(index.rank({}, "", T + 10, 5)).toEqual(open);
  });

  it("moves a proxy's next boundary earlier when a grant that ends sooner arrives", () => {
    const index = indexOf({ ...registered(2), leases: new Map([lease("l", T + 40)]) });
    expect(index.rank({}, "", T, 5)).toEqual(open);
    index.addUnfolded("p", "u", T + 10);
    expect(index.rank({}, "", T + 9, 5)).toEqual(full);
    expect(index.rank({}, "", T + 10, 5)).toEqual(open);
  });

  it("answers from the new states after they were replaced wholesale and the index invalidated", () => {
    let state = registered(1);
    const index = new ProxySelectionIndex({ stateOf: () => state, states: () => [state] });
    expect(index.rank({}, "", T, 5)).toEqual(open);
    // A snapshot loaded: every state replaced, no refresh per proxy.
    state = { ...registered(1), leases: new Map([lease("l", T + 40)]) };
    index.invalidate();
    expect(index.rank({}, "", T + 1, 5)).toEqual(full);
  });

  it("skips a proxy for a target until, not at, the end of its cooldown for that target", () => {
    const state: ProxyState = {
      ...registered(2),
      cooldowns: new Map([["x", { untilAt: new Date(T + 10).toISOString(), untilMs: T + 10, streak: 1 }]]),
    };
    const index = indexOf(state);
    expect(index.rank({}, "x", T + 9, 5)).toEqual({ stats: { considered: 1, unhealthy: 0, inCooldown: 1, atCapacity: 0 }, eligible: [] });
    expect(index.rank({}, "y", T + 9, 5)).toEqual(open);
    expect(index.rank({}, "x", T + 10, 5)).toEqual(open);
  });

  it("prunes unfolded grants only up to the earlier of now and the instant it was evaluated at (a clock that went back)", () => {
    const index = indexOf(registered(1));
    index.addUnfolded("p", "u", T + 15);
    expect(index.rank({}, "", T, 5)).toEqual(full);
    expect(index.rank({}, "", T + 20, 5)).toEqual(open);
    index.prune(T + 10);
    expect(index.rank({}, "", T + 10, 5)).toEqual(full);
  });

  it("opens a proxy when its global cooldown ends before any lease expires", () => {
    const state: ProxyState = {
      ...registered(2),
      leases: new Map([lease("l", T + 40)]),
      cooldowns: new Map([["", { untilAt: new Date(T + 10).toISOString(), untilMs: T + 10, streak: 1 }]]),
    };
    const index = indexOf(state);
    expect(index.rank({}, "", T, 5).stats.inCooldown).toBe(1);
    expect(index.rank({}, "", T + 10, 5)).toEqual(open);
  });
});

describe("ProxySelectionIndex pending boundaries of many proxies", () => {
  const named = (i: number): string => `p${String(i).padStart(2, "0")}`;
  /** Expiry offsets of ten proxies, in several orders (as added: ascending, descending, interleaved, scattered). */
  const ORDERS: readonly (readonly number[])[] = [
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    [10, 9, 8, 7, 6, 5, 4, 3, 2, 1],
    [1, 10, 2, 9, 3, 8, 4, 7, 5, 6],
    [8, 4, 1, 10, 5, 2, 7, 9, 3, 6],
    [5, 10, 4, 9, 3, 8, 2, 7, 1, 6],
  ];

  it("opens each full proxy at its own lease's expiry, whatever order the boundaries were added in", () => {
    for (const offsets of ORDERS) {
      // The first half is there when the index is first evaluated, the rest arrives (and is refreshed) after.
      for (const atStart of [offsets.length, offsets.length / 2, 0]) {
        const states = new Map<string, ProxyState>();
        const index = new ProxySelectionIndex({ stateOf: (n) => states.get(n) ?? initialProxyState(n), states: () => states.values() });
        const add = (i: number) => {
          const name = named(i);
          states.set(name, {
            ...initialProxyState(name),
            registration: { maxLeases: 1, latencyMs: 0, labels: {}, healthy: true },
            leases: new Map([lease(`l${i}`, T + offsets[i]!)]),
          });
          index.refresh(name);
        };
        for (let i = 0; i < atStart; i++) add(i);
        index.rank({}, "", T, 20);
        for (let i = atStart; i < offsets.length; i++) add(i);
        for (let t = T; t <= T + 11; t++) {
          const open = offsets.flatMap((offset, i) => (T + offset <= t ? [named(i)] : []));
          const got = index.rank({}, "", t, 20);
          expect(got.eligible, `offsets ${offsets.join(",")}, ${atStart} at start, at T+${t - T}`).toEqual(open.sort());
          expect(got.stats.atCapacity).toBe(offsets.length - open.length);
        }
      }
    }
  });
});

describe("ProxySelectionIndex pruning", () => {
  it("forgets an unfolded grant pruned at or after its expiry, also for a query whose clock went back before it", () => {
    const index = indexOf(registered(1));
    expect(index.rank({}, "", T, 5)).toEqual(open);
    index.addUnfolded("p", "u", T + 15);
    expect(index.rank({}, "", T + 14, 5)).toEqual(full);
    expect(index.rank({}, "", T + 15, 5)).toEqual(open);
    index.prune(T + 15);
    // Pruned at its expiry: it counts nowhere from then on, even when the clock goes back.
    expect(index.unfoldedOn("p", T + 10)).toBe(0);
    expect(index.rank({}, "", T + 10, 5)).toEqual(open);
  });

  // prune forgets a grant only once a query has seen it expire: the views
  // were classified at the last evaluated instant and must agree with the
  // grants they counted. Before the first query, and after invalidate()
  // (a snapshot loaded), no query has seen anything expire.
  it("keeps an unfolded grant no query has seen expire: before the first query and after invalidate()", () => {
    const fresh = indexOf(registered(1));
    fresh.addUnfolded("p", "u", T + 15);
    fresh.prune(T + 20);
    expect(fresh.unfoldedOn("p", T + 10)).toBe(1);
    expect(fresh.rank({}, "", T + 10, 5)).toEqual(full);

    const reloaded = indexOf(registered(1));
    expect(reloaded.rank({}, "", T, 5)).toEqual(open);
    reloaded.addUnfolded("p", "u", T + 15);
    reloaded.invalidate();
    reloaded.prune(T + 20);
    expect(reloaded.unfoldedOn("p", T + 10)).toBe(1);
    expect(reloaded.rank({}, "", T + 10, 5)).toEqual(full);
  });
});
