/**
 * The host decider and fold: `host.set` records a change of health or
 * draining (any of the four combinations, from any state), and only replies
 * when the host already is exactly so; a recorded change is what the fold
 * then holds.
 */
import { describe, expect, it } from "vitest";
import { decideHost } from "../../src/host/decide.ts";
import type { HistoryEntry } from "../../src/events/envelope.ts";
import { evolveHost, initialHostState, type HostState } from "../../src/host/state.ts";
import { T0 } from "../support/route-given.ts";

const FLAGS = [
  { healthy: false, draining: false, maxLeases: null },
  { healthy: false, draining: true, maxLeases: null },
  { healthy: true, draining: false, maxLeases: null },
  { healthy: true, draining: true, maxLeases: null },
] as const;

const setTo = (flags: { healthy: boolean; draining: boolean; maxLeases: null }, seq = 1): HistoryEntry => ({
  seq,
  event: { type: "HostStateSet", v: 1, at: new Date(T0).toISOString(), kind: "host", id: "h", data: { ...flags } },
});

describe("decideHost", () => {
  it("records the first set of a host, even to the flags an unset host reads as (unhealthy, not draining)", () => {
    for (const flags of FLAGS) {
      expect(decideHost(initialHostState("h"), { op: "set", ...flags })).toEqual({ outcome: "append", type: "HostStateSet", data: flags });
    }
  });

  it("replies with the host and records nothing when the host is already set to exactly those flags", () => {
    for (const flags of FLAGS) {
      const state: HostState = { host: "h", set: true, ...flags, admissions: [] };
      expect(decideHost(state, { op: "set", ...flags })).toEqual({ outcome: "reply", reply: { host: "h" } });
    }
  });

  it("records a change of either flag, or both", () => {
    for (const from of FLAGS) {
      for (const to of FLAGS) {
        if (from.healthy === to.healthy && from.draining === to.draining) continue;
        const state: HostState = { host: "h", set: true, ...from, admissions: [] };
        expect(decideHost(state, { op: "set", ...to })).toEqual({ outcome: "append", type: "HostStateSet", data: to });
      }
    }
  });

  it("records a change of the cap alone: set, lifted, or changed", () => {
    for (const [from, to] of [
      [null, 3],
      [3, null],
      [3, 4],
    ] as const) {
      const state: HostState = { host: "h", set: true, healthy: true, draining: false, maxLeases: from, admissions: [] };
      expect(decideHost(state, { op: "set", healthy: true, draining: false, maxLeases: to })).toEqual({
        outcome: "append",
        type: "HostStateSet",
        data: { healthy: true, draining: false, maxLeases: to },
      });
    }
  });
});

describe("evolveHost", () => {
  it("holds what the last HostStateSet recorded, and ignores what it cannot read or does not know", () => {
    let state = initialHostState("h");
    for (const [i, flags] of FLAGS.entries()) {
      state = evolveHost(state, setTo(flags, i + 1));
      expect(state).toEqual({ host: "h", set: true, ...flags, admissions: [] });
    }
    expect(evolveHost(state, { seq: 9, unparsable: true, reason: "x" })).toBe(state);
    const other = { seq: 10, event: { type: "HostRenamed", v: 1, at: new Date(T0).toISOString(), kind: "host", id: "h", data: {} } };
    expect(evolveHost(state, other as unknown as HistoryEntry)).toBe(state);
  });
});
