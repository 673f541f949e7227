/**
 * Given/when/then specs of one proxy actor: registration, removal, the
 * authoritative grant check (health, cooldown scoping, capacity, in that
 * order), release, report with its target fallback, retention, and the
 * fold's and the pruning's properties.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decideProxy } from "../../src/proxy/decide.ts";
import type { ProxyCommand } from "../../src/proxy/commands.ts";
import { activeCooldowns, activeLeases, evolveProxy, initialProxyState, pruneProxy } from "../../src/proxy/state.ts";
import type { HistoryEntry } from "../../src/events/envelope.ts";
import {
  COOLDOWN_MS,
  cooledDown,
  givenProxy,
  givenState,
  grant,
  granted,
  iso,
  PROXY,
  registered,
  releasedLease,
  removed,
  SETTINGS,
  SOME_STATS,
  T0,
} from "../support/proxy-given.ts";

const S = 1000;

describe("proxy.register", () => {
  it("records a first registration with every field", () => {
    givenProxy([])
      .when({ op: "register", maxLeases: 3, latencyMs: 40, labels: { region: "eu" }, healthy: true }, T0)
      .thenRecords("ProxyRegistered", { maxLeases: 3, latencyMs: 40, labels: { region: "eu" }, healthy: true });
  });

  it("records a changed registration (register again = update)", () => {
    givenProxy([registered(1, { maxLeases: 3, latencyMs: 40 })])
      .when({ op: "register", maxLeases: 3, latencyMs: 40, labels: {}, healthy: false }, T0)
      .thenRecords("ProxyRegistered", { maxLeases: 3, latencyMs: 40, labels: {}, healthy: false });
  });

  it.each([
    ["maxLeases", { maxLeases: 4, latencyMs: 40 }],
    ["latencyMs", { maxLeases: 3, latencyMs: 41 }],
  ])("records a registration that changes only %s", (_what, change) => {
    givenProxy([registered(1, { maxLeases: 3, latencyMs: 40 })])
      .when({ op: "register", ...change, labels: {}, healthy: true }, T0)
      .thenRecords("ProxyRegistered", { ...change, labels: {}, healthy: true });
  });

  it("records nothing when the registration is already exactly that (labels in any order)", () => {
    givenProxy([registered(1, { maxLeases: 2, latencyMs: 5, labels: { a: "1", b: "2" } })])
      .when({ op: "register", maxLeases: 2, latencyMs: 5, labels: { b: "2", a: "1" }, healthy: true }, T0)
      .thenReplies({ proxy: PROXY });
  });

  it("records a label set that differs only by one extra pair", () => {
    givenProxy([registered(1, { maxLeases: 2, labels: { a: "1" } })])
      .when({ op: "register", maxLeases: 2, latencyMs: 0, labels: { a: "1", b: "2" }, healthy: true }, T0)
      .thenRecords("ProxyRegistered", { maxLeases: 2, latencyMs: 0, labels: { a: "1", b: "2" }, healthy: true });
  });

  it("records registering a removed proxy again, even with its old settings", () => {
    givenProxy([registered(1, { maxLeases: 2 }), removed(2)])
      .when({ op: "register", maxLeases: 2, latencyMs: 0, labels: {}, healthy: true }, T0)
      .thenRecords("ProxyRegistered", { maxLeases: 2, latencyMs: 0, labels: {}, healthy: true });
  });
});

describe("proxy.remove", () => {
  it("removes a registered proxy", () => {
    givenProxy([registered(1, { maxLeases: 2 })])
      .when({ op: "remove" }, T0)
      .thenRecords("ProxyRemoved", {});
  });

  it("is UNKNOWN_PROXY for a proxy never registered", () => {
    givenProxy([])
      .when({ op: "remove" }, T0)
      .thenRejects("UNKNOWN_PROXY", { proxies: [PROXY] });
  });

  it("is UNKNOWN_PROXY for a proxy removed already", () => {
    givenProxy([registered(1, { maxLeases: 2 }), removed(2)])
      .when({ op: "remove" }, T0)
      .thenRejects("UNKNOWN_PROXY", { proxies: [PROXY] });
  });
});

describe("grant (the proxy's own, authoritative eligibility check)", () => {
  it("grants with the expiry now + ttlMs and records the selector's stats", () => {
    givenProxy([registered(1, { maxLeases: 1 })])
      .when(grant({ leaseId: "L1", ttlMs: 30 * S, target: "example.com" }), T0 + 5 * S)
      .thenRecords("ProxyLeaseGranted", {
        leaseId: "L1",
        target: "example.com",
        ttlMs: 30 * S,
        expiresAt: iso(T0 + 35 * S),
        stats: SOME_STATS,
      });
  });

  it("refuses at capacity: active unexpired leases = maxLeases", () => {
    givenProxy([
      registered(1, { maxLeases: 2 }),
      granted(2, { leaseId: "L1", ttlMs: 10 * S }),
      granted(3, { leaseId: "L2", ttlMs: 10 * S }),
    ])
      .when(grant(), T0 + 9 * S)
      .thenRefusesGrant("atCapacity");
  });

  it("maxLeases: 0 is never leasable", () => {
    givenProxy([registered(1, { maxLeases: 0 })])
      .when(grant(), T0)
      .thenRefusesGrant("atCapacity");
  });

  it("does not count a lease from the instant it expires (expiresAt <= now)", () => {
    const history = [registered(1, { maxLeases: 1 }), granted(2, { leaseId: "L1", ttlMs: 10 * S })];
    givenProxy(history)
      .when(grant(), T0 + 10 * S - 1)
      .thenRefusesGrant("atCapacity");
    expect(givenProxy(history).when(grant(), T0 + 10 * S).decision.outcome).toBe("append");
  });

  it("does not count a released lease", () => {
    givenProxy([registered(1, { maxLeases: 1 }), granted(2, { leaseId: "L1", ttlMs: 10 * S }), releasedLease(3, "L1")])
      .when(grant({ leaseId: "L2" }), T0 + S)
      .thenRecords("ProxyLeaseGranted", { leaseId: "L2", target: "", ttlMs: 10 * S, expiresAt: iso(T0 + 11 * S), stats: SOME_STATS });
  });

  it("counts a lowered cap against the leases it already has", () => {
    givenProxy([registered(1, { maxLeases: 3 }), granted(2, { leaseId: "L1", ttlMs: 10 * S }), registered(3, { maxLeases: 1 })])
      .when(grant(), T0 + S)
      .thenRefusesGrant("atCapacity");
  });

  it("refuses an unregistered or removed proxy as no longer considered", () => {
    givenProxy([]).when(grant(), T0).thenRefusesGrant("notConsidered");
    givenProxy([registered(1, { maxLeases: 1 }), removed(2)])
      .when(grant(), T0)
      .thenRefusesGrant("notConsidered");
  });

  it("refuses when its labels no longer hold the acquisition's labels", () => {
    const history = [registered(1, { maxLeases: 1, labels: { region: "us" } })];
    givenProxy(history)
      .when(grant({ labels: { region: "eu" } }), T0)
      .thenRefusesGrant("notConsidered");
    expect(givenProxy(history).when(grant({ labels: { region: "us" } }), T0).decision.outcome).toBe("append");
  });

  it("refuses an unhealthy proxy, before any cooldown or capacity check", () => {
    givenProxy([
      registered(1, { maxLeases: 1 }),
      granted(2, { leaseId: "L1", ttlMs: 10 * S }),
      cooledDown(3, { leaseId: "L1", target: "" }),
      registered(4, { maxLeases: 1, healthy: false }),
    ])
      .when(grant(), T0 + S)
      .thenRefusesGrant("unhealthy");
  });

  it("refuses during a cooldown before checking capacity", () => {
    givenProxy([
      registered(1, { maxLeases: 1 }),
      granted(2, { leaseId: "L1", ttlMs: 10 * S }),
      cooledDown(3, { leaseId: "L1", target: "" }),
    ])
      .when(grant(), T0 + S)
      .thenRefusesGrant("inCooldown");
  });

  it('a global cooldown (target "") applies to every target', () => {
    const history = [
      registered(1, { maxLeases: 5 }),
      granted(2, { leaseId: "L1", ttlMs: 10 * S }),
      cooledDown(3, { leaseId: "L1", target: "" }),
    ];
    givenProxy(history)
      .when(grant({ target: "" }), T0 + S)
      .thenRefusesGrant("inCooldown");
    givenProxy(history)
      .when(grant({ target: "a.example" }), T0 + S)
      .thenRefusesGrant("inCooldown");
  });

  it("a target-scoped cooldown applies only to that target", () => {
    const history = [
      registered(1, { maxLeases: 5 }),
      granted(2, { leaseId: "L1", ttlMs: 10 * S }),
      cooledDown(3, { leaseId: "L1", target: "a.example" }),
    ];
    givenProxy(history)
      .when(grant({ target: "a.example" }), T0 + S)
      .thenRefusesGrant("inCooldown");
    expect(givenProxy(history).when(grant({ target: "b.example" }), T0 + S).decision.outcome).toBe("append");
    // An acquisition without a target sees only the global pool.
    expect(givenProxy(history).when(grant({ target: "" }), T0 + S).decision.outcome).toBe("append");
  });

  it("a cooldown ends at untilAt (now < untilAt cools down, now = untilAt does not)", () => {
    const history = [
      registered(1, { maxLeases: 5 }),
      granted(2, { leaseId: "L1", ttlMs: 10 * S }),
      cooledDown(3, { leaseId: "L1", target: "" }),
    ];
    givenProxy(history)
      .when(grant(), T0 + COOLDOWN_MS - 1)
      .thenRefusesGrant("inCooldown");
    expect(givenProxy(history).when(grant(), T0 + COOLDOWN_MS).decision.outcome).toBe("append");
  });

  it("keeps a cooldown reported while removed for when the proxy is registered again", () => {
    givenProxy([
      registered(1, { maxLeases: 5 }),
      granted(2, { leaseId: "L1", ttlMs: 10 * S }),
      removed(3),
      cooledDown(4, { leaseId: "L1", target: "" }),
      registered(5, { maxLeases: 5 }),
    ])
      .when(grant(), T0 + S)
      .thenRefusesGrant("inCooldown");
  });

  it("counts leases granted before a removal again once the proxy is back", () => {
    givenProxy([registered(1, { maxLeases: 1 }), granted(2, { leaseId: "L1", ttlMs: 10 * S }), removed(3), registered(4, { maxLeases: 1 })])
      .when(grant(), T0 + S)
      .thenRefusesGrant("atCapacity");
  });
});

describe("release", () => {
  const history = [registered(1, { maxLeases: 2 }), granted(2, { leaseId: "L1", ttlMs: 10 * S })];

  it("records the release of an active lease", () => {
    givenProxy(history)
      .when({ op: "release", leaseId: "L1" }, T0 + S)
      .thenRecords("ProxyLeaseReleased", { leaseId: "L1" });
  });

  it("records the release of an expired lease still within retention (it stops resolving)", () => {
    givenProxy(history)
      .when({ op: "release", leaseId: "L1" }, T0 + 10 * S + COOLDOWN_MS)
      .thenRecords("ProxyLeaseReleased", { leaseId: "L1" });
  });

  it("records nothing for a lease past retention, released already, or never granted", () => {
    givenProxy(history)
      .when({ op: "release", leaseId: "L1" }, T0 + 10 * S + COOLDOWN_MS + 1)
      .thenReplies({});
    givenProxy([...history, releasedLease(3, "L1")])
      .when({ op: "release", leaseId: "L1" }, T0 + S)
      .thenReplies({});
    givenProxy(history).when({ op: "release", leaseId: "nope" }, T0).thenReplies({});
  });
});

describe("report", () => {
  const base = [registered(1, { maxLeases: 2 }), granted(2, { leaseId: "L1", ttlMs: 10 * S, target: "a.example" })];
  const untargeted = [registered(1, { maxLeases: 2 }), granted(2, { leaseId: "L0", ttlMs: 10 * S })];
  const report = (leaseId: string, result: "ok" | "rate_limited" | "banned", target = ""): ProxyCommand => ({
    op: "report",
    leaseId,
    result,
    target,
  });

  it("ok records nothing", () => {
    givenProxy(base)
      .when(report("L1", "ok"), T0 + S)
      .thenReplies({});
  });

  it("rate_limited without a target cools the proxy down for the lease's own target", () => {
    givenProxy(base)
      .when(report("L1", "rate_limited"), T0 + S)
      .thenRecords("ProxyCooldownStarted", {
        leaseId: "L1",
        result: "rate_limited",
        target: "a.example",
        untilAt: iso(T0 + S + COOLDOWN_MS),
        cooldownMs: COOLDOWN_MS,
        streak: 1,
      });
  });

  it("banned is recorded exactly as rate_limited is", () => {
    givenProxy(base)
      .when(report("L1", "banned"), T0 + S)
      .thenRecords("ProxyCooldownStarted", {
        leaseId: "L1",
        result: "banned",
        target: "a.example",
        untilAt: iso(T0 + S + COOLDOWN_MS),
        cooldownMs: COOLDOWN_MS,
        streak: 1,
      });
  });

  it("the report's own target wins over the lease's", () => {
    givenProxy(base)
      .when(report("L1", "rate_limited", "b.example"), T0 + S)
      .thenRecords("ProxyCooldownStarted", {
        leaseId: "L1",
        result: "rate_limited",
        target: "b.example",
        untilAt: iso(T0 + S + COOLDOWN_MS),
        cooldownMs: COOLDOWN_MS,
        streak: 1,
      });
  });

  it("with neither a report target nor a lease target the cooldown is global", () => {
    givenProxy(untargeted)
      .when(report("L0", "banned"), T0 + S)
      .thenRecords("ProxyCooldownStarted", {
        leaseId: "L0",
        result: "banned",
        target: "",
        untilAt: iso(T0 + S + COOLDOWN_MS),
        cooldownMs: COOLDOWN_MS,
        streak: 1,
      });
  });

  it("a report on an expired lease resolves until cooldownMs after its expiry, inclusive", () => {
    givenProxy(base)
      .when(report("L1", "rate_limited"), T0 + 10 * S + COOLDOWN_MS)
      .thenRecords("ProxyCooldownStarted", {
        leaseId: "L1",
        result: "rate_limited",
        target: "a.example",
        untilAt: iso(T0 + 10 * S + 2 * COOLDOWN_MS),
        cooldownMs: COOLDOWN_MS,
        streak: 1,
      });
    givenProxy(base)
      .when(report("L1", "ok"), T0 + 10 * S + COOLDOWN_MS)
      .thenReplies({});
  });

  it("is UNKNOWN_LEASE past retention, even for ok", () => {
    givenProxy(base)
      .when(report("L1", "rate_limited"), T0 + 10 * S + COOLDOWN_MS + 1)
      .thenRejects("UNKNOWN_LEASE");
    givenProxy(base)
      .when(report("L1", "ok"), T0 + 10 * S + COOLDOWN_MS + 1)
      .thenRejects("UNKNOWN_LEASE");
  });

  it("is UNKNOWN_LEASE at once after a release, even before expiry", () => {
    givenProxy([...base, releasedLease(3, "L1", T0 + S)])
      .when(report("L1", "ok"), T0 + 2 * S)
      .thenRejects("UNKNOWN_LEASE");
  });

  it("is UNKNOWN_LEASE for a lease never granted here", () => {
    givenProxy(base).when(report("L9", "ok"), T0).thenRejects("UNKNOWN_LEASE");
  });

  it("keeps resolving leases of a removed proxy", () => {
    givenProxy([...base, removed(3)])
      .when(report("L1", "banned"), T0 + S)
      .thenRecords("ProxyCooldownStarted", {
        leaseId: "L1",
        result: "banned",
        target: "a.example",
        untilAt: iso(T0 + S + COOLDOWN_MS),
        cooldownMs: COOLDOWN_MS,
        streak: 1,
      });
  });
});

describe("the proxy fold", () => {
  const history = [
    registered(1, { maxLeases: 3, labels: { region: "eu" } }),
    granted(2, { leaseId: "L1", ttlMs: 10 * S, target: "t" }),
    granted(3, { leaseId: "L2", ttlMs: 20 * S }),
    releasedLease(4, "L2"),
    cooledDown(5, { leaseId: "L1", target: "t" }),
    removed(6),
    registered(7, { maxLeases: 1 }),
  ];

  it("is idempotent: applying every event twice gives the same state", () => {
    const once = history.reduce(evolveProxy, initialProxyState(PROXY));
    const twice = history.flatMap((e) => [e, e]).reduce(evolveProxy, initialProxyState(PROXY));
    expect(twice).toEqual(once);
  });

  it("keeps leases and cooldowns across a removal and a registration", () => {
    const state = history.reduce(evolveProxy, initialProxyState(PROXY));
    expect(state.registration).toEqual({ maxLeases: 1, latencyMs: 0, labels: {}, healthy: true });
    expect([...state.leases.keys()]).toEqual(["L1"]);
    expect(activeCooldowns(state, T0)).toEqual([{ target: "t", untilAt: iso(T0 + COOLDOWN_MS), streak: 1 }]);
  });

  it("ignores a message that does not parse", () => {
    const state = history.reduce(evolveProxy, initialProxyState(PROXY));
    expect(evolveProxy(state, { seq: 8, unparsable: true, reason: "not JSON" })).toBe(state);
  });
});

describe("pruning (what the sweep drops from memory)", () => {
  const history = [
    registered(1, { maxLeases: 3 }),
    granted(2, { leaseId: "L1", ttlMs: 10 * S }),
    granted(3, { leaseId: "L2", ttlMs: 30 * S }),
    cooledDown(4, { leaseId: "L1", target: "" }),
    cooledDown(5, { leaseId: "L1", target: "t", at: T0 + 5 * S }),
  ];
  const state = history.reduce(evolveProxy, initialProxyState(PROXY));

  it("drops a lease only once past retention, and a cooldown only once it ended cooldownMs ago (a report until then goes on with its streak)", () => {
    expect(pruneProxy(state, T0 + COOLDOWN_MS - 1, SETTINGS.cooldownMs)).toBe(state);
    const retentionEnd = pruneProxy(state, T0 + 10 * S + COOLDOWN_MS, SETTINGS.cooldownMs);
    expect([...retentionEnd.leases.keys()]).toEqual(["L1", "L2"]);
    expect([...retentionEnd.cooldowns.keys()]).toEqual(["", "t"]);
    const later = pruneProxy(state, T0 + 10 * S + COOLDOWN_MS + 1, SETTINGS.cooldownMs);
    expect([...later.leases.keys()]).toEqual(["L2"]);
    expect(activeLeases(later, T0 + 11 * S)).toBe(activeLeases(state, T0 + 11 * S));
    expect([...pruneProxy(state, T0 + 2 * COOLDOWN_MS - 1, SETTINGS.cooldownMs).cooldowns.keys()]).toEqual(["", "t"]);
    expect([...pruneProxy(state, T0 + 2 * COOLDOWN_MS, SETTINGS.cooldownMs).cooldowns.keys()]).toEqual(["t"]);
    expect([...pruneProxy(state, T0 + 5 * S + 2 * COOLDOWN_MS, SETTINGS.cooldownMs).cooldowns.keys()]).toEqual([]);
  });

  it("never changes a decision at or after the instant it pruned at", () => {
    const leaseIds = ["L0", "L1", "L2", "L3"];
    const targets = ["", "t", "u"];
    const event = fc.oneof(
      fc.record({ kind: fc.constant("register" as const), maxLeases: fc.integer({ min: 0, max: 3 }), healthy: fc.boolean() }),
      fc.record({
        kind: fc.constant("grant" as const),
        leaseId: fc.constantFrom(...leaseIds),
        ttlMs: fc.integer({ min: 1, max: 90 * S }),
        target: fc.constantFrom(...targets),
      }),
      fc.record({ kind: fc.constant("release" as const), leaseId: fc.constantFrom(...leaseIds) }),
      fc.record({ kind: fc.constant("cooldown" as const), leaseId: fc.constantFrom(...leaseIds), target: fc.constantFrom(...targets) }),
      fc.constant({ kind: "remove" as const }),
    );
    const command = fc.oneof(
      fc.record({ op: fc.constant("grant" as const), target: fc.constantFrom(...targets) }).map((c) => grant({ target: c.target })),
      fc.record({ op: fc.constant("release" as const), leaseId: fc.constantFrom(...leaseIds) }),
      fc.record({
        op: fc.constant("report" as const),
        leaseId: fc.constantFrom(...leaseIds),
        result: fc.constantFrom("ok" as const, "rate_limited" as const, "banned" as const),
        target: fc.constantFrom(...targets),
      }),
      fc.constant({ op: "remove" as const }),
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(event, fc.integer({ min: 0, max: 40 * S })), { maxLength: 12, size: "max" }),
        fc.integer({ min: 0, max: 4 * COOLDOWN_MS }),
        fc.integer({ min: 0, max: 2 * COOLDOWN_MS }),
        command,
        (steps, pruneAfter, decideAfter, cmd) => {
          let at = T0;
          const entries: HistoryEntry[] = steps.map(([e, dt], i) => {
            at += dt;
            const seq = i + 1;
            switch (e.kind) {
              case "register":
                return registered(seq, { maxLeases: e.maxLeases, healthy: e.healthy, at });
              case "grant":
                return granted(seq, { leaseId: e.leaseId, ttlMs: e.ttlMs, target: e.target, at });
              case "release":
                return releasedLease(seq, e.leaseId, at);
              case "cooldown":
                return cooledDown(seq, { leaseId: e.leaseId, target: e.target, at });
              case "remove":
                return removed(seq, at);
            }
          });
          const full = givenProxy(entries).state;
          const pruneAt = at + pruneAfter;
          const pruned = pruneProxy(full, pruneAt, SETTINGS.cooldownMs);
          const now = pruneAt + decideAfter;
          expect(decideProxy(pruned, cmd, now, SETTINGS)).toEqual(decideProxy(full, cmd, now, SETTINGS));
          expect(givenState(pruned).when(cmd, now).decision).toEqual(givenState(full).when(cmd, now).decision);
          expect(activeLeases(pruned, now)).toBe(activeLeases(full, now));
          expect(activeCooldowns(pruned, now)).toEqual(activeCooldowns(full, now));
        },
      ),
      { numRuns: 300 },
    );
  });
});
