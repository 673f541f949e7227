/**
 * Hand-built histories, one per audit rule, each breaking that rule at known
 * messages (and holding a few look-alike messages that must pass). They are
 * written straight into a stream, bypassing the service, as a broken or
 * hostile writer would. Every name carries the scenario's tag, so all
 * scenarios can share one stream without touching each other's actors.
 */
import { encodeEvent, type EventEnvelope } from "../../../src/events/envelope.ts";
import { Subjects, type ActorKind } from "../../../src/contract/subjects.ts";
import type { AuditRule } from "../../../src/tools/audit.ts";

/** The instant crafted histories start at. */
export const CRAFT_T0 = Date.parse("2026-05-01T00:00:00.000Z");

/** The audit settings the scenarios assume (retention 60 s, max TTL 30 s). */
export const CRAFT_AUDIT = { cooldownMs: 60_000, maxTtlMs: 30_000, operators: ["ops/*"] } as const;

/** One message to write: a subject (relative to the prefix) and its bytes. */
export interface CraftedMessage {
  subject(subjects: Subjects): string;
  readonly payload: Uint8Array;
}

/** A history that breaks `rule` at the messages at `breaks` (0-based positions), and nowhere else. */
export interface Scenario {
  readonly rule: AuditRule;
  readonly title: string;
  readonly messages: readonly CraftedMessage[];
  readonly breaks: readonly number[];
}

/** The instant `s` seconds after {@link CRAFT_T0}. */
export function at(s: number): string {
  return new Date(CRAFT_T0 + s * 1000).toISOString();
}

const encoder = new TextEncoder();

/** An event on its own actor's subject. */
export function event(kind: ActorKind, id: string, type: string, s: number, data: Record<string, unknown>): CraftedMessage {
  const envelope: EventEnvelope = { type, v: 1, at: at(s), kind, id, data };
  return { subject: (subjects) => subjects.event(kind, id), payload: encodeEvent(envelope) };
}

/** An event written for principal `by`. */
export function eventBy(by: string, kind: ActorKind, id: string, type: string, s: number, data: Record<string, unknown>): CraftedMessage {
  const envelope: EventEnvelope = { type, v: 1, at: at(s), kind, id, by, data };
  return { subject: (subjects) => subjects.event(kind, id), payload: encodeEvent(envelope) };
}

/** Any bytes on an actor's subject. */
export function raw(kind: ActorKind, id: string, text: string): CraftedMessage {
  return { subject: (subjects) => subjects.event(kind, id), payload: encoder.encode(text) };
}

/** An arbitrary JSON value (e.g. a malformed envelope) on an actor's subject. */
export function json(kind: ActorKind, id: string, value: unknown): CraftedMessage {
  return raw(kind, id, JSON.stringify(value));
}

const expires = (s: number, ttl: number) => at(s + ttl / 1000);

/** Lock events, tersely. */
const lock = {
  acquire: (name: string, s: number, owner: string, generation: number, ttlMs = 10_000, previousOwner = "") =>
    event("lock", name, "LockAcquired", s, { owner, generation, ttlMs, expiresAt: expires(s, ttlMs), previousOwner }),
  renew: (name: string, s: number, owner: string, generation: number, ttlMs = 10_000) =>
    event("lock", name, "LockRenewed", s, { owner, generation, ttlMs, expiresAt: expires(s, ttlMs) }),
  release: (name: string, s: number, owner: string, generation: number) => event("lock", name, "LockReleased", s, { owner, generation }),
};

/** Proxy events, tersely. */
const proxy = {
  register: (name: string, s: number, maxLeases: number, healthy = true) =>
    event("proxy", name, "ProxyRegistered", s, { maxLeases, latencyMs: 10, labels: {}, healthy }),
  remove: (name: string, s: number) => event("proxy", name, "ProxyRemoved", s, {}),
  grant: (name: string, s: number, leaseId: string, target = "", ttlMs = 60_000) =>
    event("proxy", name, "ProxyLeaseGranted", s, { leaseId, target, ttlMs, expiresAt: expires(s, ttlMs) }),
  release: (name: string, s: number, leaseId: string) => event("proxy", name, "ProxyLeaseReleased", s, { leaseId }),
  cooldown: (name: string, s: number, leaseId: string, target: string, forS = 60) =>
    event("proxy", name, "ProxyCooldownStarted", s, { leaseId, result: "rate_limited", target, untilAt: at(s + forS) }),
};

/** Host and route events, tersely. */
const host = (name: string, s: number, healthy: boolean, draining = false) => event("host", name, "HostStateSet", s, { healthy, draining });
const cappedHost = (name: string, s: number, maxLeases: number) =>
  event("host", name, "HostStateSet", s, { healthy: true, draining: false, maxLeases });
const admitted = (name: string, s: number, route: string, routeSeq: number) =>
  event("host", name, "HostLeaseAdmitted", s, { route, fp: "", model: "m", routeSeq, closed: [] });
const candidatesSeen = (name: string, s: number, on: string) => event("route", name, "RouteCandidatesSeen", s, { seen: [on] });
const route = {
  placed: (name: string, s: number, fp: string, model: string, on: string, from = "", reason = "new", reused = false) =>
    event("route", name, "RouteLeasePlaced", s, { fp, model, host: on, from, reason, reused }),
  touched: (name: string, s: number, fp: string, model: string) => event("route", name, "RouteLeaseTouched", s, { fp, model }),
  expired: (name: string, s: number, fp: string, model: string, on: string) =>
    event("route", name, "RouteLeaseExpired", s, { fp, model, host: on }),
  pinned: (name: string, s: number, on: string, displaced: { fp: string; model: string; host: string }[] = []) =>
    event("route", name, "RoutePinned", s, { host: on, displaced }),
  released: (name: string, s: number, released: { fp: string; model: string; host: string }[]) =>
    event("route", name, "RouteReleased", s, { released }),
};

/** Builds one scenario with `n` making its names unique. */
type ScenarioOf = (n: (name: string) => string) => Scenario;

const BUILDERS: readonly ScenarioOf[] = [
  (n) => ({
    rule: "event-parses",
    title: "a message that is not JSON, one of an unknown type, one whose data lacks a field",
    messages: [
      raw("lock", n("lock"), "{not json"),
      json("lock", n("lock"), { type: "LockStolen", v: 1, at: at(1), kind: "lock", id: n("lock"), data: {} }),
      json("lock", n("lock"), {
        type: "LockAcquired",
        v: 1,
        at: at(2),
        kind: "lock",
        id: n("lock"),
        data: { owner: "w1", generation: "one" },
      }),
    ],
    breaks: [0, 1, 2],
  }),
  (n) => ({
    rule: "envelope",
    title: "no `v`; a proxy envelope on a lock subject; another id; a host event on a lock subject; a subject that is no actor's",
    messages: [
      json("lock", n("lock"), { type: "LockReleased", at: at(1), kind: "lock", id: n("lock"), data: { owner: "w1", generation: 1 } }),
      json("lock", n("lock"), { type: "ProxyRemoved", v: 1, at: at(2), kind: "proxy", id: n("lock"), data: {} }),
      json("lock", n("lock"), { type: "LockReset", v: 1, at: at(3), kind: "lock", id: n("other"), data: { generation: 0 } }),
      json("lock", n("lock"), {
        type: "HostStateSet",
        v: 1,
        at: at(4),
        kind: "lock",
        id: n("lock"),
        data: { healthy: true, draining: false },
      }),
      {
        subject: (s) => `${s.prefix}.events.widget.${s.event("lock", n("lock")).split(".").pop()!}`,
        payload: encoder.encode(
          JSON.stringify({ type: "LockReset", v: 1, at: at(5), kind: "lock", id: n("lock"), data: { generation: 0 } }),
        ),
      },
    ],
    breaks: [0, 1, 2, 3, 4],
  }),
  (n) => ({
    rule: "subject-at-decreases",
    title: "a renewal stamped before the acquisition it renews",
    messages: [lock.acquire(n("lock"), 10, "w1", 1), lock.renew(n("lock"), 5, "w1", 1), lock.renew(n("lock"), 11, "w1", 1)],
    breaks: [1],
  }),
  (n) => ({
    rule: "proxy-over-capacity",
    title: "a second unexpired lease on a proxy of maxLeases 1 (a third, after both expired, is fine)",
    messages: [
      proxy.register(n("p"), 0, 1),
      proxy.grant(n("p"), 1, n("l1")),
      proxy.grant(n("p"), 2, n("l2")),
      proxy.grant(n("p"), 100, n("l3")),
    ],
    breaks: [2],
  }),
  (n) => ({
    rule: "proxy-grant-in-cooldown",
    title: "grants during a target's cooldown and during a global one (for another target, or after the end, they are fine)",
    messages: [
      proxy.register(n("p"), 0, 10),
      proxy.grant(n("p"), 1, n("l1"), "t"),
      proxy.cooldown(n("p"), 2, n("l1"), "t", 60),
      proxy.grant(n("p"), 10, n("l2"), "t"),
      proxy.grant(n("p"), 11, n("l3"), "other"),
      proxy.grant(n("p"), 70, n("l4"), "t"),
      proxy.cooldown(n("p"), 71, n("l4"), "", 60),
      proxy.grant(n("p"), 80, n("l5"), "zzz"),
    ],
    breaks: [3, 7],
  }),
  (n) => ({
    rule: "proxy-grant-unregistered",
    title: "a grant on a proxy never registered, and one on a removed proxy",
    messages: [
      proxy.grant(n("p"), 1, n("l1")),
      proxy.register(n("q"), 2, 5),
      proxy.grant(n("q"), 3, n("l2")),
      proxy.remove(n("q"), 4),
      proxy.grant(n("q"), 5, n("l3")),
    ],
    breaks: [0, 4],
  }),
  (n) => ({
    rule: "proxy-grant-unhealthy",
    title: "a grant on a proxy registered unhealthy (once registered healthy again, grants are fine)",
    messages: [
      proxy.register(n("p"), 0, 5, false),
      proxy.grant(n("p"), 1, n("l1")),
      proxy.register(n("p"), 2, 5, true),
      proxy.grant(n("p"), 3, n("l2")),
    ],
    breaks: [1],
  }),
  (n) => ({
    rule: "proxy-lease-id-reused",
    title: "the same lease id granted on two proxies",
    messages: [
      proxy.register(n("p"), 0, 5),
      proxy.register(n("q"), 0, 5),
      proxy.grant(n("p"), 1, n("same")),
      proxy.grant(n("q"), 2, n("same")),
    ],
    breaks: [3],
  }),
  (n) => ({
    rule: "proxy-report-unknown-lease",
    title: "cooldowns from reports on a lease never granted, on a released one, on one past retention (within retention is fine)",
    messages: [
      proxy.register(n("p"), 0, 5),
      proxy.cooldown(n("p"), 1, n("never"), "t"),
      proxy.grant(n("p"), 2, n("l1"), "g", 1000),
      proxy.release(n("p"), 2.5, n("l1")),
      proxy.cooldown(n("p"), 3, n("l1"), "t"),
      proxy.grant(n("p"), 4, n("l2"), "g", 1000),
      proxy.cooldown(n("p"), 64, n("l2"), "t"),
      proxy.grant(n("p"), 100, n("l3"), "g", 1000),
      proxy.cooldown(n("p"), 162, n("l3"), "t"),
    ],
    breaks: [1, 4, 8],
  }),
  (n) => ({
    rule: "proxy-release-unknown-lease",
    title: "a release of a lease never granted, and a second release of the same lease",
    messages: [
      proxy.register(n("p"), 0, 5),
      proxy.release(n("p"), 1, n("never")),
      proxy.grant(n("p"), 2, n("l1")),
      proxy.release(n("p"), 3, n("l1")),
      proxy.release(n("p"), 4, n("l1")),
    ],
    breaks: [1, 4],
  }),
  (n) => ({
    rule: "route-key-on-two-hosts",
    title: "a key placed on a second host as if it had no lease",
    messages: [
      host(n("h1"), 0, true),
      host(n("h2"), 0, true),
      route.placed(n("r"), 1, "a", "m", n("h1")),
      route.placed(n("r"), 2, "a", "m", n("h2")),
      route.placed(n("r"), 3, "b", "m", n("h2")),
    ],
    breaks: [3],
  }),
  (n) => ({
    rule: "route-placed-on-unhealthy-host",
    title: "new placements on an unhealthy host and on a host never set (an operator's move there is fine)",
    messages: [
      host(n("h1"), 0, false),
      route.placed(n("r"), 1, "a", "m", n("h1")),
      route.placed(n("r"), 2, "b", "m", n("h2")),
      route.placed(n("r"), 3, "c", "m", n("h1"), "", "ctx"),
    ],
    breaks: [1, 2],
  }),
  (n) => ({
    rule: "route-new-on-draining-host",
    title: "a new placement on a draining host (inherited placements and placements on the pin are fine there)",
    messages: [
      host(n("h1"), 0, true, true),
      host(n("h2"), 0, true),
      route.placed(n("r"), 1, "a", "m", n("h1")),
      route.placed(n("r"), 2, "", "m", n("h2")),
      host(n("h2"), 3, true, true),
      route.placed(n("r"), 4, "x", "m", n("h2"), "", "new", true),
      route.pinned(n("r2"), 5, n("h3")),
      host(n("h3"), 5, true, true),
      route.placed(n("r2"), 6, "a", "m", n("h3")),
    ],
    breaks: [2],
  }),
  (n) => ({
    rule: "route-new-on-full-host",
    title: "a new lease chosen onto a host at its cap (a pin, an inherited host and a host under its cap are fine)",
    messages: [
      cappedHost(n("h1"), 0, 1),
      route.placed(n("r"), 1, "a", "m", n("h1")),
      route.placed(n("r"), 2, "b", "m", n("h1")),
      route.placed(n("r"), 3, "x", "m", n("h1"), "", "new", true),
      route.pinned(n("r2"), 4, n("h1")),
      route.placed(n("r2"), 5, "a", "m", n("h1")),
      host(n("h2"), 6, true),
      route.placed(n("r"), 7, "c", "m", n("h2")),
    ],
    breaks: [2],
  }),
  (n) => ({
    rule: "host-admitted-when-full",
    title: "an admission while the open admissions fill the cap (an admission whose route moved on no longer counts)",
    messages: [
      cappedHost(n("h1"), 0, 2),
      admitted(n("h1"), 1, n("r1"), 0),
      admitted(n("h1"), 2, n("r2"), 0),
      admitted(n("h1"), 3, n("r3"), 0),
      candidatesSeen(n("r2"), 4, n("h1")),
      candidatesSeen(n("r3"), 5, n("h1")),
      admitted(n("h1"), 6, n("r4"), 0),
    ],
    breaks: [3],
  }),
  (n) => ({
    rule: "route-placed-off-pin",
    title: "a new placement on another host than the route's pin",
    messages: [
      host(n("h1"), 0, true),
      host(n("h2"), 0, true),
      route.pinned(n("r"), 1, n("h1")),
      route.placed(n("r"), 2, "a", "m", n("h2")),
      route.placed(n("r"), 3, "b", "m", n("h1")),
    ],
    breaks: [3],
  }),
  (n) => ({
    rule: "route-unknown-lease",
    title:
      "an expiry of a key with no lease, a release naming the wrong host, a touch of no lease, a placement from a host the key was never on",
    messages: [
      host(n("h1"), 0, true),
      host(n("h2"), 0, true),
      route.expired(n("r"), 1, "a", "m", n("h1")),
      route.placed(n("r"), 2, "b", "m", n("h1")),
      route.released(n("r"), 3, [{ fp: "b", model: "m", host: n("h2") }]),
      route.touched(n("r"), 4, "c", "m"),
      route.placed(n("r"), 5, "d", "m", n("h2"), n("h1"), "unhealthy"),
    ],
    breaks: [2, 4, 5, 6],
  }),
  (n) => ({
    rule: "lock-two-holders",
    title: "an acquisition while the previous lease is unexpired (after expiry it is fine)",
    messages: [
      lock.acquire(n("lock"), 0, "w1", 1),
      lock.acquire(n("lock"), 5, "w2", 2, 10_000, "w1"),
      lock.acquire(n("lock"), 20, "w3", 3, 10_000, "w2"),
    ],
    breaks: [1],
  }),
  (n) => ({
    rule: "lock-generation-not-plus-one",
    title: "a generation that skips one",
    messages: [lock.acquire(n("lock"), 0, "w1", 1), lock.release(n("lock"), 1, "w1", 1), lock.acquire(n("lock"), 2, "w2", 3)],
    breaks: [2],
  }),
  (n) => ({
    rule: "lock-generation-repeated",
    title: "a generation granted twice, and one not above a reset's",
    messages: [
      lock.acquire(n("lock"), 0, "w1", 1),
      lock.release(n("lock"), 1, "w1", 1),
      lock.acquire(n("lock"), 2, "w2", 1),
      event("lock", n("lock"), "LockReset", 3, { generation: 5 }),
      lock.acquire(n("lock"), 4, "w3", 5),
    ],
    breaks: [2, 4],
  }),
  (n) => ({
    rule: "lock-renew-not-holder",
    title: "renewals by another owner, with another generation, and of a released lock (the holder's own is fine)",
    messages: [
      lock.acquire(n("lock"), 0, "w1", 1),
      lock.renew(n("lock"), 1, "w1", 1),
      lock.renew(n("lock"), 2, "w2", 1),
      lock.renew(n("lock"), 3, "w2", 2),
      lock.release(n("lock"), 4, "w2", 2),
      lock.renew(n("lock"), 5, "w2", 2),
    ],
    breaks: [2, 3, 5],
  }),
  (n) => ({
    rule: "lock-release-not-holder",
    title: "a release by another owner, and a release of a lock already released (the holder's own is fine)",
    messages: [
      lock.acquire(n("lock"), 0, "w1", 1),
      lock.release(n("lock"), 1, "w2", 1),
      lock.acquire(n("lock"), 2, "w1", 2),
      lock.release(n("lock"), 3, "w1", 2),
      lock.release(n("lock"), 4, "w1", 2),
    ],
    breaks: [1, 4],
  }),
  (n) => ({
    rule: "lock-previous-owner-mismatch",
    title: "an acquisition after expiry that does not name the expired holder",
    messages: [
      lock.acquire(n("lock"), 0, "w1", 1, 5000),
      lock.acquire(n("lock"), 10, "w2", 2, 5000, ""),
      lock.acquire(n("lock"), 20, "w3", 3, 5000, "w2"),
    ],
    breaks: [1],
  }),
  (n) => ({
    rule: "lock-lease-beyond-max-ttl",
    title: "a lease ending an hour after its acquisition, a renewal ending a minute after (exactly maxTtlMs is fine)",
    messages: [
      lock.acquire(n("lock"), 0, "w1", 1, 3_600_000),
      lock.renew(n("lock"), 1, "w1", 1, 60_000),
      lock.renew(n("lock"), 2, "w1", 1, 30_000),
    ],
    breaks: [0, 1],
  }),
  (n) => ({
    rule: "lock-queue-order",
    title:
      "an acquisition by someone else while the head waiter is in its claim window (after the window it is fine, and the waiter keeps its place while the intruder holds the lock)",
    messages: [
      lock.acquire(n("lock"), 0, "w0", 1),
      event("lock", n("lock"), "LockWaiterQueued", 1, { owner: "w1", until: at(60), claimWindowMs: 2000 }),
      lock.release(n("lock"), 2, "w0", 1),
      // w1's window runs from 2 s to 4 s: the intruder takes the lock in it.
      lock.acquire(n("lock"), 3, "intruder", 2),
      // Freed again at 5 s, w1 gets a new window, to 7 s; at 8 s it has lost its place.
      lock.release(n("lock"), 5, "intruder", 2),
      lock.acquire(n("lock"), 8, "late", 3),
    ],
    breaks: [3],
  }),
  (n) => {
    const opened = (id: string, s: number, ttlMs = 10_000) =>
      event("session", id, "SessionOpened", s, { owner: "w", ttlMs, expiresAt: expires(s, ttlMs) });
    const underSession = (name: string, s: number, owner: string, generation: number, session: string, expiresAt: string) =>
      event("lock", name, "LockAcquired", s, { owner, generation, ttlMs: 10_000, expiresAt, previousOwner: "", session });
    return {
      rule: "lock-acquired-under-ended-session",
      title:
        "locks acquired under a session after it expired, after it was closed, under one never opened, and by another owner (one kept alive first is fine)",
      messages: [
        opened(n("s1"), 0),
        // Kept alive at 8 s to 18 s: an acquisition at 15 s is fine; at 20 s the session had ended.
        event("session", n("s1"), "SessionKeptAlive", 8, { expiresAt: at(18) }),
        underSession(n("a"), 15, "w", 1, n("s1"), at(18)),
        underSession(n("b"), 20, "w", 1, n("s1"), at(18)),
        opened(n("s2"), 21),
        event("session", n("s2"), "SessionClosed", 22, {}),
        underSession(n("c"), 23, "w", 1, n("s2"), at(31)),
        underSession(n("d"), 24, "w", 1, n("never"), at(34)),
        opened(n("s3"), 25),
        underSession(n("e"), 26, "intruder", 1, n("s3"), at(35)),
      ],
      breaks: [3, 6, 7, 9],
    };
  },
  (n) => ({
    rule: "session-after-end",
    title: "a keepalive after the session expired, a close after it was closed, and a second open (a keepalive in time is fine)",
    messages: [
      event("session", n("s"), "SessionOpened", 0, { owner: "w", ttlMs: 10_000, expiresAt: at(10) }),
      event("session", n("s"), "SessionKeptAlive", 9, { expiresAt: at(19) }),
      event("session", n("s"), "SessionKeptAlive", 19, { expiresAt: at(29) }),
      event("session", n("t"), "SessionOpened", 0, { owner: "w", ttlMs: 10_000, expiresAt: at(10) }),
      event("session", n("t"), "SessionClosed", 1, {}),
      event("session", n("t"), "SessionClosed", 2, {}),
      event("session", n("t"), "SessionOpened", 3, { owner: "w", ttlMs: 10_000, expiresAt: at(13) }),
    ],
    breaks: [2, 5, 6],
  }),
  (n) => {
    const alice = "clients/alice";
    const bob = "clients/bob";
    const lockBy = (by: string, type: string, s: number, data: Record<string, unknown>) => eventBy(by, "lock", n("lock"), type, s, data);
    return {
      rule: "holder-principal",
      title:
        "alice's lock released by bob, her session kept alive by bob and her proxy lease released by bob (her own renewal and an operator's release are fine)",
      messages: [
        lockBy(alice, "LockAcquired", 0, { owner: "a", generation: 1, ttlMs: 10_000, expiresAt: at(10), previousOwner: "" }),
        lockBy(alice, "LockRenewed", 1, { owner: "a", generation: 1, ttlMs: 10_000, expiresAt: at(11) }),
        lockBy(bob, "LockReleased", 2, { owner: "a", generation: 1 }),
        lockBy(alice, "LockAcquired", 3, { owner: "a", generation: 2, ttlMs: 10_000, expiresAt: at(13), previousOwner: "" }),
        lockBy("ops/carol", "LockReleased", 4, { owner: "a", generation: 2 }),
        eventBy(alice, "session", n("s"), "SessionOpened", 0, { owner: "a", ttlMs: 10_000, expiresAt: at(10) }),
        eventBy(bob, "session", n("s"), "SessionKeptAlive", 1, { expiresAt: at(11) }),
        eventBy("ops", "proxy", n("p"), "ProxyRegistered", 0, { maxLeases: 2, latencyMs: 0, labels: {}, healthy: true }),
        eventBy(alice, "proxy", n("p"), "ProxyLeaseGranted", 1, { leaseId: n("l"), target: "", ttlMs: 60_000, expiresAt: at(61) }),
        eventBy(bob, "proxy", n("p"), "ProxyLeaseReleased", 2, { leaseId: n("l") }),
      ],
      breaks: [2, 6, 9],
    };
  },
];

/** Every scenario, its names prefixed by `tag` and its own position, so all can share one stream. */
export function scenarios(tag = "x"): Scenario[] {
  return BUILDERS.map((build, i) => build((name) => `${tag}.${i}/${name}`));
}
