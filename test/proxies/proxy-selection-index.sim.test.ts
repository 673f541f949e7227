/**
 * The selection index answers exactly as ranking every proxy does (select.ts),
 * whatever the history: registrations (labels, health, caps), grants,
 * releases, global and per-target cooldowns, this instance's unfolded grants
 * and asks, time moving forward past expiries and, now and then, backwards.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { considerProxies, rankProxies } from "../../src/actors/proxy/select.ts";
import { ProxySelectionIndex } from "../../src/projections/proxy-selection-index.ts";
import { initialProxyState, type ProxyState } from "../../src/projections/proxy.ts";

const NAMES = ["a", "b", "c", "d", "e", "B"];
const TARGETS = ["", "x", "y"];

type Op =
  | { op: "register"; p: number; maxLeases: number; latencyMs: number; zone: string | null; healthy: boolean }
  | { op: "remove"; p: number }
  | { op: "grant"; p: number; ttlMs: number; target: number }
  | { op: "release"; p: number }
  | { op: "cooldown"; p: number; target: number; ms: number }
  | { op: "unfolded"; p: number; ttlMs: number }
  | { op: "ask"; p: number; delta: 1 | -1 }
  | { op: "time"; ms: number };

const p = fc.integer({ min: 0, max: NAMES.length - 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant("register" as const),
    p,
    maxLeases: fc.integer({ min: 1, max: 3 }),
    latencyMs: fc.integer({ min: 0, max: 2 }),
    zone: fc.constantFrom(null, "eu", "us"),
    healthy: fc.boolean(),
  }),
  fc.record({ op: fc.constant("remove" as const), p }),
  fc.record({ op: fc.constant("grant" as const), p, ttlMs: fc.integer({ min: 1, max: 50 }), target: fc.integer({ min: 0, max: 2 }) }),
  fc.record({ op: fc.constant("release" as const), p }),
  fc.record({ op: fc.constant("cooldown" as const), p, target: fc.integer({ min: 0, max: 2 }), ms: fc.integer({ min: 1, max: 50 }) }),
  fc.record({ op: fc.constant("unfolded" as const), p, ttlMs: fc.integer({ min: 1, max: 50 }) }),
  fc.record({ op: fc.constant("ask" as const), p, delta: fc.constantFrom(1 as const, -1 as const) }),
  fc.record({ op: fc.constant("time" as const), ms: fc.integer({ min: -20, max: 40 }) }),
);

describe("ProxySelectionIndex", () => {
  it("gives the same stats and order as ranking every proxy, for every label set and target", () => {
    let longest = 0;
    fc.assert(
      // size "max": histories spread over 0..60 operations as written (fast-check's default size stops near 10).
      fc.property(fc.array(op, { maxLength: 60, size: "max" }), (ops) => {
        longest = Math.max(longest, ops.length);
        const states = new Map<string, ProxyState>();
        const stateOf = (name: string) => states.get(name) ?? initialProxyState(name);
        const index = new ProxySelectionIndex({ stateOf, states: () => states.values() });
        const unfolded = new Map<string, { proxy: string; expiresAtMs: number }>();
        const asking = new Map<string, number>();
        let now = 1000;
        let ids = 0;
        const set = (name: string, state: ProxyState) => {
          states.set(name, state);
          index.refresh(name);
        };
        for (const o of ops) {
          const name = o.op === "time" ? "" : NAMES[o.p]!;
          const s = stateOf(name);
          switch (o.op) {
            case "register":
              set(name, {
                ...s,
                registration: {
                  maxLeases: o.maxLeases,
                  latencyMs: o.latencyMs,
                  labels: o.zone === null ? {} : { zone: o.zone },
                  healthy: o.healthy,
                },
              });
              break;
            case "remove":
              set(name, { ...s, registration: null });
              break;
            case "grant": {
              const leases = new Map(s.leases);
              const id = `l${++ids}`;
              const expiresAtMs = now + o.ttlMs;
              leases.set(id, {
                id,
                target: TARGETS[o.target]!,
                ttlMs: o.ttlMs,
                expiresAt: new Date(expiresAtMs).toISOString(),
                expiresAtMs,
              });
              set(name, { ...s, leases });
              break;
            }
            case "release": {
              const first = [...s.leases.keys()][0];
              if (first === undefined) break;
              const leases = new Map(s.leases);
              leases.delete(first);
              set(name, { ...s, leases });
              break;
            }
            case "cooldown": {
              const cooldowns = new Map(s.cooldowns);
              cooldowns.set(TARGETS[o.target]!, { untilAt: new Date(now + o.ms).toISOString(), untilMs: now + o.ms, streak: 1 });
              set(name, { ...s, cooldowns });
              break;
            }
            case "unfolded": {
              const id = `u${++ids}`;
              unfolded.set(id, { proxy: name, expiresAtMs: now + o.ttlMs });
              index.addUnfolded(name, id, now + o.ttlMs);
              break;
            }
            case "ask": {
              const n = Math.max(0, (asking.get(name) ?? 0) + o.delta);
              if (n === (asking.get(name) ?? 0)) break;
              asking.set(name, n);
              index.noteAsking(name, o.delta);
              break;
            }
            case "time":
              now += o.ms;
              break;
          }
          for (const labels of [{}, { zone: "eu" }] as Record<string, string>[]) {
            for (const target of TARGETS) {
              const got = index.rank(labels, target, now, NAMES.length);
              const considered = considerProxies(undefined, labels, stateOf, () => states.values());
              if ("unknown" in considered) throw new Error("unexpected");
              const want = rankProxies(considered.considered, target, now, {
                granted: (n) => [...unfolded.values()].filter((u) => u.proxy === n && now < u.expiresAtMs).length,
                asking: (n) => asking.get(n) ?? 0,
              });
              expect(got.stats).toEqual(want.stats);
              expect(got.eligible).toEqual(want.eligible);
              expect(index.unfoldedOn("a", now)).toBe([...unfolded.values()].filter((u) => u.proxy === "a" && now < u.expiresAtMs).length);
            }
          }
        }
      }),
      { numRuns: 150 },
    );
    expect(longest).toBeGreaterThanOrEqual(50);
  });
});
