/**
 * The proxy fold and the questions every reader asks of its state, on their
 * own (decide-proxy.unit.test.ts reaches them through the decider): what each
 * event changes and what it leaves alone, label matching with own properties
 * only, and every time boundary (a lease active while `now < expiresAt`, a
 * cooldown while `now < untilAt`, a lease resolving while `now <= expiresAt +
 * retention`, pruning only what no later instant can see).
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  acquireReplyOf,
  activeCooldowns,
  activeLeases,
  compareNames,
  evolveProxy,
  inCooldown,
  initialProxyState,
  labelsMatch,
  ownLabels,
  proxyView,
  pruneProxy,
  resolvableLease,
  sameLabels,
  zeroStats,
  type ProxyState,
} from "../../src/proxy/state.ts";
import type { HistoryEntry } from "../../src/events/envelope.ts";
import { specEvent } from "../support/event-builders.ts";
import { granted, iso, PROXY, proxyEvent, registered, releasedLease, removed, T0 } from "../support/proxy-given.ts";

const fold = (history: readonly HistoryEntry[]): ProxyState => history.reduce(evolveProxy, initialProxyState(PROXY));

function cooldown(seq: number, target: string, untilMs: number, streak?: number): HistoryEntry {
  return proxyEvent(seq, "ProxyCooldownStarted", {
    leaseId: "l",
    result: "rate_limited",
    target,
    untilAt: iso(untilMs),
    ...(streak === undefined ? {} : { streak }),
  });
}

describe("evolveProxy", () => {
  it("records a registration with every field, labels as own properties", () => {
    const s = fold([registered(1, { maxLeases: 3, latencyMs: 40, labels: { region: "eu" }, healthy: false })]);
    expect(s.registration).toEqual({ maxLeases: 3, latencyMs: 40, labels: { region: "eu" }, healthy: false });
    expect(s.name).toBe(PROXY);
  });

  it("keeps leases and cooldowns through a removal, and forgets only the registration", () => {
    const before = fold([registered(1, { maxLeases: 3 }), granted(2, { leaseId: "a", ttlMs: 1000 }), cooldown(3, "", T0 + 500)]);
    const after = evolveProxy(before, removed(4));
    expect(after.registration).toBeNull();
    expect(after.leases).toBe(before.leases);
    expect(after.cooldowns).toBe(before.cooldowns);
  });

  it("records a grant's lease with its expiry as text and as epoch ms, leaving the state it came from unchanged", () => {
    const before = fold([registered(1, { maxLeases: 3 })]);
    const after = evolveProxy(before, granted(2, { leaseId: "a", ttlMs: 1500, target: "t" }));
    expect([...after.leases.values()]).toEqual([{ id: "a", target: "t", ttlMs: 1500, expiresAt: iso(T0 + 1500), expiresAtMs: T0 + 1500 }]);
    expect(before.leases.size).toBe(0);
  });

  it("drops a released lease, and returns the same state for a release of a lease it does not have", () => {
    const s = fold([granted(1, { leaseId: "a", ttlMs: 1000 }), granted(2, { leaseId: "b", ttlMs: 1000 })]);
    const released = evolveProxy(s, releasedLease(3, "a"));
    expect([...released.leases.keys()]).toEqual(["b"]);
    expect(s.leases.size).toBe(2);
    expect(evolveProxy(released, releasedLease(4, "a"))).toBe(released);
  });

  it("sets a pair's cooldown to the reported end and streak (1 when the event has none), replacing an older one", () => {
    const s = fold([cooldown(1, "x", T0 + 5000, 3), cooldown(2, "", T0 + 2000)]);
    expect(s.cooldowns.get("x")).toEqual({ untilAt: iso(T0 + 5000), untilMs: T0 + 5000, streak: 3 });
    expect(s.cooldowns.get("")).toEqual({ untilAt: iso(T0 + 2000), untilMs: T0 + 2000, streak: 1 });
    // A later, shorter cooldown replaces the longer one (never merged).
    const replaced = evolveProxy(s, cooldown(3, "x", T0 + 1000));
    expect(replaced.cooldowns.get("x")).toEqual({ untilAt: iso(T0 + 1000), untilMs: T0 + 1000, streak: 1 });
    expect(s.cooldowns.get("x")!.untilMs).toBe(T0 + 5000);
  });

  it("changes nothing for a message that does not parse, or an event of another kind", () => {
    const s = fold([registered(1, { maxLeases: 1 })]);
    expect(evolveProxy(s, { seq: 2, unparsable: true, reason: "not JSON" })).toBe(s);
    const lockEvent = specEvent(3, "lock", "l", "LockReleased", { owner: "o", generation: 1 }, T0);
    expect(evolveProxy(s, lockEvent)).toBe(s);
  });
});

describe("labels", () => {
  it("copies labels as own properties, so one named like an Object.prototype member is ordinary", () => {
    const labels = ownLabels(JSON.parse('{"__proto__":"x","toString":"y"}') as Record<string, string>);
    expect(Object.keys(labels).sort()).toEqual(["__proto__", "toString"]);
    expect(labelsMatch(labels, { toString: "y" })).toBe(true);
  });

  it("matches when every required pair is there with the same value, and only then", () => {
    expect(labelsMatch({ a: "1", b: "2" }, { a: "1" })).toBe(true);
    expect(labelsMatch({ a: "1" }, {})).toBe(true);
    expect(labelsMatch({ a: "1" }, { a: "2" })).toBe(false);
    expect(labelsMatch({ a: "1" }, { a: "1", b: "2" })).toBe(false);
    // An inherited member is not a label.
    expect(labelsMatch({}, { toString: "y" })).toBe(false);
  });

  it("calls two label sets the same only with the same pairs, whatever their order", () => {
    expect(sameLabels({ a: "1", b: "2" }, { b: "2", a: "1" })).toBe(true);
    expect(sameLabels({ a: "1" }, { a: "1", b: "2" })).toBe(false);
    expect(sameLabels({ a: "1", b: "2" }, { a: "1" })).toBe(false);
    expect(sameLabels({ a: "1" }, { a: "2" })).toBe(false);
  });
});

describe("questions at an instant", () => {
  const s = fold([
    registered(1, { maxLeases: 5 }),
    granted(2, { leaseId: "a", ttlMs: 1000 }),
    granted(3, { leaseId: "b", ttlMs: 2000 }),
    cooldown(4, "", T0 + 1000),
    cooldown(5, "x", T0 + 3000, 2),
    cooldown(6, "b-target", T0 + 2000),
  ]);

  it("counts a lease active until, not at, its expiry", () => {
    expect(activeLeases(s, T0)).toBe(2);
    expect(activeLeases(s, T0 + 999)).toBe(2);
    expect(activeLeases(s, T0 + 1000)).toBe(1);
    expect(activeLeases(s, T0 + 2000)).toBe(0);
  });

  it("applies the global cooldown to every target, a scoped one to its target only, each until its end", () => {
    expect(inCooldown(s, "", T0 + 999)).toBe(true);
    expect(inCooldown(s, "y", T0 + 999)).toBe(true);
    expect(inCooldown(s, "", T0 + 1000)).toBe(false);
    expect(inCooldown(s, "y", T0 + 1000)).toBe(false);
    expect(inCooldown(s, "x", T0 + 2999)).toBe(true);
    expect(inCooldown(s, "x", T0 + 3000)).toBe(false);
    // Without a target, only the global cooldown counts.
    const scopedOnly = fold([cooldown(1, "x", T0 + 3000)]);
    expect(inCooldown(scopedOnly, "", T0)).toBe(false);
    expect(inCooldown(scopedOnly, "x", T0)).toBe(true);
    expect(inCooldown(initialProxyState(PROXY), "x", T0)).toBe(false);
  });

  it("resolves a lease until retention after its expiry, inclusive, and never one it does not have", () => {
    expect(resolvableLease(s, "a", T0 + 1000 + 500, 500)?.id).toBe("a");
    expect(resolvableLease(s, "a", T0 + 1000 + 501, 500)).toBeUndefined();
    expect(resolvableLease(s, "zz", T0, 500)).toBeUndefined();
  });

  it("lists the active cooldowns sorted by target, with their end and streak", () => {
    expect(activeCooldowns(s, T0)).toEqual([
      { target: "", untilAt: iso(T0 + 1000), streak: 1 },
      { target: "b-target", untilAt: iso(T0 + 2000), streak: 1 },
      { target: "x", untilAt: iso(T0 + 3000), streak: 2 },
    ]);
    expect(activeCooldowns(s, T0 + 2000)).toEqual([{ target: "x", untilAt: iso(T0 + 3000), streak: 2 }]);
  });

  it("gives proxy.list's entry: the registration, the active leases and cooldowns at that instant", () => {
    expect(proxyView(s, s.registration!, T0 + 1000)).toEqual({
      proxy: PROXY,
      maxLeases: 5,
      latencyMs: 0,
      labels: {},
      healthy: true,
      active: 1,
      cooldowns: [
        { target: "b-target", untilAt: iso(T0 + 2000), streak: 1 },
        { target: "x", untilAt: iso(T0 + 3000), streak: 2 },
      ],
    });
  });
});

describe("pruneProxy", () => {
  const s = fold([granted(1, { leaseId: "a", ttlMs: 1000 }), cooldown(2, "x", T0 + 1000)]);

  it("returns the state itself when nothing can go", () => {
    expect(pruneProxy(s, T0 + 1000 + 499, 500)).toBe(s);
  });

  it("drops a lease only after its retention, a cooldown from its end plus retention on", () => {
    // At expiry + retention the lease still resolves; the cooldown ended retention ago and goes.
    const atEdge = pruneProxy(s, T0 + 1500, 500);
    expect([...atEdge.leases.keys()]).toEqual(["a"]);
    expect([...atEdge.cooldowns.keys()]).toEqual([]);
    const after = pruneProxy(s, T0 + 1501, 500);
    expect(after.leases.size).toBe(0);
    // The original is untouched.
    expect(s.leases.size).toBe(1);
    expect(s.cooldowns.size).toBe(1);
  });

  it("answers every later question as the unpruned state does", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ ttl: fc.integer({ min: 1, max: 100 }), at: fc.integer({ min: 0, max: 100 }), cooled: fc.boolean() }), {
          maxLength: 12,
          size: "max",
        }),
        fc.integer({ min: 0, max: 250 }),
        fc.integer({ min: 0, max: 50 }),
        fc.integer({ min: 0, max: 100 }),
        (items, now, retention, later) => {
          const history = items.map((it, i) =>
            it.cooled
              ? cooldown(i + 1, `t${i % 3}`, T0 + it.at + it.ttl)
              : granted(i + 1, { leaseId: `l${i}`, ttlMs: it.ttl, at: T0 + it.at }),
          );
          const state = fold(history);
          const pruned = pruneProxy(state, T0 + now, retention);
          const t = T0 + now + later;
          expect(activeLeases(pruned, t)).toBe(activeLeases(state, t));
          expect(activeCooldowns(pruned, t)).toEqual(activeCooldowns(state, t));
          for (let i = 0; i < items.length; i++) {
            expect(resolvableLease(pruned, `l${i}`, t, retention)).toEqual(resolvableLease(state, `l${i}`, t, retention));
          }
        },
      ),
    );
  });
});

describe("replies and order", () => {
  it("answers a recorded grant with its lease on that proxy and its stats, zero stats when none were kept", () => {
    const data = { leaseId: "a", target: "t", ttlMs: 10, expiresAt: iso(T0 + 10) };
    const stats = { considered: 4, unhealthy: 1, inCooldown: 1, atCapacity: 1 };
    expect(acquireReplyOf("p1", { ...data, stats })).toEqual({
      lease: { id: "a", proxy: "p1", target: "t", expiresAt: iso(T0 + 10) },
      stats,
    });
    expect(acquireReplyOf("p1", data).stats).toEqual({ considered: 0, unhealthy: 0, inCooldown: 0, atCapacity: 0 });
    expect(zeroStats()).toEqual({ considered: 0, unhealthy: 0, inCooldown: 0, atCapacity: 0 });
  });

  it("orders names by UTF-16 code units", () => {
    expect(compareNames("B", "a")).toBe(-1);
    expect(compareNames("a", "B")).toBe(1);
    expect(compareNames("a", "a")).toBe(0);
    expect(compareNames("\uffff", "\u{10000}")).toBe(1);
  });
});
