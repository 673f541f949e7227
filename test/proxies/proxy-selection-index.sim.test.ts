/**
 * The selection index answers exactly as ranking every proxy does (select.ts),
 * whatever the history: registrations (labels, health, caps), grants,
 * releases, global and per-target cooldowns, this instance's unfolded grants
 * and asks, time moving forward past expiries and, now and then, backwards.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { considerProxies, rankProxies } from "../../src/proxy/select.ts";
import { ProxySelectionIndex } from "../../src/proxy/selection-index.ts";
import { initialProxyState, type ProxyState } from "../../src/proxy/state.ts";

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
  | { op: "fold"; p: number }
  | { op: "prune" }
  | { op: "invalidate" }
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
  fc.record({ op: fc.constant("fold" as const), p }),
  fc.record({ op: fc.constant("prune" as const) }),
  fc.record({ op: fc.constant("invalidate" as const) }),
  fc.record({ op: fc.constant("time" as const), ms: fc.integer({ min: -20, max: 40 }) }),
);

/** Every label requirement the checks rank under (`us` and the pair only now and then, so views come and go). */
const LABEL_SETS: Record<string, string>[] = [{}, { zone: "eu" }, { zone: "us" }, { zone: "eu", tier: "x" }];

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
        let evaluatedAt = now;
        let ids = 0;
        let step = 0;
        const set = (name: string, state: ProxyState) => {
          states.set(name, state);
          index.refresh(name);
        };
        for (const o of ops) {
          const name = "p" in o ? NAMES[o.p]! : "";
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
            case "fold": {
              // The fold reaches this instance's oldest unfolded grant on the proxy: a lease of the state from now on.
              const found = [...unfolded].find(([, u]) => u.proxy === name);
              if (found === undefined) break;
              const [id, u] = found;
              unfolded.delete(id);
              index.forgetUnfolded(name, id);
              const leases = new Map(s.leases);
              leases.set(id, { id, target: "", ttlMs: 1, expiresAt: new Date(u.expiresAtMs).toISOString(), expiresAtMs: u.expiresAtMs });
              set(name, { ...s, leases });
              break;
            }
            case "prune": {
              // Unfolded grants expired at the instant the index was last evaluated (or now, if earlier) count nowhere again.
              const horizon = Math.min(now, evaluatedAt);
              for (const [id, u] of unfolded) if (horizon >= u.expiresAtMs) unfolded.delete(id);
              index.prune(now);
              break;
            }
            case "invalidate":
              index.invalidate();
              break;
            case "time":
              now += o.ms;
              break;
          }
          step++;
          for (const labels of [LABEL_SETS[0]!, LABEL_SETS[step % LABEL_SETS.length]!]) {
            for (const target of TARGETS) {
              // Limits from none to more than there are proxies.
              const limit = (step + target.length) % (NAMES.length + 2);
              const got = index.rank(labels, target, now, limit);
              evaluatedAt = now;
              const considered = considerProxies(undefined, labels, stateOf, () => states.values());
              if ("unknown" in considered) throw new Error("unexpected");
              const want = rankProxies(considered.considered, target, now, {
                granted: (n) => [...unfolded.values()].filter((u) => u.proxy === n && now < u.expiresAtMs).length,
                asking: (n) => asking.get(n) ?? 0,
              });
              expect(got.stats).toEqual(want.stats);
              expect(got.eligible).toEqual(want.eligible.slice(0, limit));
              expect(index.sizes.proxies).toBe([...states.values()].filter((st) => st.registration !== null).length);
              expect(index.unfoldedOn("a", now)).toBe([...unfolded.values()].filter((u) => u.proxy === "a" && now < u.expiresAtMs).length);
              expect(index.askingOf(name === "" ? "a" : name)).toBe(asking.get(name === "" ? "a" : name) ?? 0);
            }
          }
        }
      }),
      { numRuns: 150 },
    );
    expect(longest).toBeGreaterThanOrEqual(50);
  });

  it("keeps at most 64 label views besides the one without labels, and answers alike for a view built again", () => {
    const states = new Map<string, ProxyState>();
    for (let i = 0; i < 80; i++) {
      const name = `p${String(i).padStart(2, "0")}`;
      states.set(name, {
        ...initialProxyState(name),
        registration: { maxLeases: 1, latencyMs: i, labels: { k: String(i), all: "1" }, healthy: true },
      });
    }
    const index = new ProxySelectionIndex({ stateOf: (n) => states.get(n) ?? initialProxyState(n), states: () => states.values() });
    const one = (name: string) => ({ stats: { considered: 1, unhealthy: 0, inCooldown: 0, atCapacity: 0 }, eligible: [name] });
    expect(index.rank({ k: "0" }, "", 1000, 5)).toEqual(one("p00"));
    for (let i = 1; i < 64; i++) index.rank({ k: String(i) }, "", 1000, 5);
    expect(index.sizes.views).toBe(65);
    // Used again (most recently used now), then more views than fit: the oldest go, answers stay.
    expect(index.rank({ k: "0" }, "", 1000, 5)).toEqual(one("p00"));
    for (let i = 64; i < 80; i++) expect(index.rank({ k: String(i) }, "", 1000, 5)).toEqual(one(`p${i}`));
    expect(index.sizes.views).toBe(65);
    expect(index.rank({ all: "1" }, "", 1000, 2).eligible).toEqual(["p00", "p01"]);
    // The view without labels is never the one dropped.
    expect(index.rank({}, "", 1000, 1).stats.considered).toBe(80);
    expect(index.rank({ k: "1" }, "", 1000, 5)).toEqual(one("p01"));
    expect(index.sizes.views).toBe(65);
    expect(index.sizes.proxies).toBe(80);
  });
});
