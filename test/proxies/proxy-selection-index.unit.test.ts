/**
 * The selection index re-classifies a proxy at its next boundary, the
 * earliest of them: the first of several leases (folded or this instance's
 * unfolded grants) to expire, or the end of a global cooldown, whatever order
 * they were recorded or added in. The property (proxy-selection-index.sim.test.ts)
 * rarely lines these up; here they are by hand.
 */
import { describe, expect, it } from "vitest";
import { ProxySelectionIndex } from "../../src/projections/proxy-selection-index.ts";
import { initialProxyState, type ProxyLease, type ProxyState } from "../../src/projections/proxy.ts";

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
