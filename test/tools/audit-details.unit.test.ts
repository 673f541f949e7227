/**
 * The audit's finer cases, beyond one crafted history per rule
 * (audit-rules.unit.test.ts): a placement that names a host admission (the
 * admission must be that host's, for that key, and used in its place), leases
 * that move between hosts counted on the right one, the exact edges of each
 * time rule (retention, maxTtlMs, expiry), a lease re-granted under its own
 * id, sequences and instants that fall back more than once, and each way a
 * lease can fail to resolve, as the operator reads it; and the lease id
 * index, which forgets ids past retention once it has grown.
 */
import { describe, expect, it } from "vitest";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { type StoredMessage } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { auditStream, type Violation } from "../../src/tools/audit.ts";
import { at, CRAFT_AUDIT, CRAFT_T0, event, type CraftedMessage } from "./support/violations.ts";

const subjects = new Subjects("craft");

/** Audits `messages` written in order (stored a millisecond apart) and returns each violation as `rule #seq: message`. */
async function findings(messages: readonly CraftedMessage[]): Promise<string[]> {
  let t = CRAFT_T0;
  const log = new MemoryEventLog({ now: () => t++ });
  for (const m of messages) log.appendRaw(m.subject(subjects), m.payload);
  const violations: Violation[] = [];
  await auditStream(log.readStream(), subjects, { ...CRAFT_AUDIT, onViolation: (v) => violations.push(v) });
  return violations.map((v) => `${v.rule} #${v.seq}: ${v.message}`);
}

const cappedHost = (name: string, s: number, maxLeases: number) =>
  event("host", name, "HostStateSet", s, { healthy: true, draining: false, maxLeases });
const hostSet = (name: string, s: number, healthy: boolean) => event("host", name, "HostStateSet", s, { healthy, draining: false });
const admitted = (name: string, s: number, a: { route: string; fp?: string; model?: string; routeSeq: number }) =>
  event("host", name, "HostLeaseAdmitted", s, { route: a.route, fp: a.fp ?? "", model: a.model ?? "m", routeSeq: a.routeSeq, closed: [] });
const placed = (
  route: string,
  s: number,
  p: { fp?: string; model?: string; host: string; from?: string; reason?: string; reused?: boolean; admission?: number },
) =>
  event("route", route, "RouteLeasePlaced", s, {
    fp: p.fp ?? "",
    model: p.model ?? "m",
    host: p.host,
    from: p.from ?? "",
    reason: p.reason ?? "new",
    reused: p.reused ?? false,
    ...(p.admission === undefined ? {} : { admission: p.admission }),
  });
const seen = (route: string, s: number, on: string) => event("route", route, "RouteCandidatesSeen", s, { seen: [on] });
const expires = (s: number, ttlMs: number) => new Date(CRAFT_T0 + s * 1000 + ttlMs).toISOString();
const grant = (proxy: string, s: number, leaseId: string, ttlMs = 1000) =>
  event("proxy", proxy, "ProxyLeaseGranted", s, { leaseId, target: "", ttlMs, expiresAt: expires(s, ttlMs) });
const register = (proxy: string, s: number, maxLeases: number) =>
  event("proxy", proxy, "ProxyRegistered", s, { maxLeases, latencyMs: 1, labels: {}, healthy: true });
const acquire = (
  lock: string,
  s: number,
  a: { owner: string; generation: number; ttlMs?: number; previousOwner?: string; waiterSeq?: number },
) =>
  event("lock", lock, "LockAcquired", s, {
    owner: a.owner,
    generation: a.generation,
    ttlMs: a.ttlMs ?? 10_000,
    expiresAt: expires(s, a.ttlMs ?? 10_000),
    previousOwner: a.previousOwner ?? "",
    ...(a.waiterSeq === undefined ? {} : { waiterSeq: a.waiterSeq }),
  });

describe("host admissions named by a placement", () => {
  it("accepts a placement in the admission's place, then refuses the same admission twice", async () => {
    expect(
      await findings([
        cappedHost("h1", 0, 1),
        admitted("h1", 1, { route: "r", routeSeq: 0 }),
        // Seq 3: the route's next event after its sequence 0, naming admission 2: fine, although h1 is then full.
        placed("r", 2, { host: "h1", admission: 2 }),
        placed("r", 3, { fp: "b", host: "h1", admission: 2 }),
      ]),
    ).toEqual([
      `route-new-on-full-host #4: key (r, "b", "m") placed on h1 naming admission 2, which is not that host's admission of this key`,
    ]);
  });

  it("refuses an admission of another host, route, fp or model", async () => {
    const history = [
      cappedHost("h1", 0, 5),
      cappedHost("h2", 0, 5),
      admitted("h1", 1, { route: "r", fp: "a", model: "m", routeSeq: 0 }), // 3
      admitted("h1", 1, { route: "r", fp: "a", model: "m", routeSeq: 0 }), // 4
      admitted("h1", 1, { route: "r", fp: "a", model: "m", routeSeq: 0 }), // 5
      admitted("h1", 1, { route: "r", fp: "a", model: "m", routeSeq: 0 }), // 6
      placed("r", 2, { fp: "a", model: "m", host: "h2", admission: 3 }),
      placed("other", 2, { fp: "a", model: "m", host: "h1", admission: 4 }),
      placed("r", 3, { fp: "z", model: "m", host: "h1", admission: 5 }),
      placed("r", 4, { fp: "a", model: "n", host: "h1", admission: 6 }),
    ];
    expect(await findings(history)).toEqual([
      `route-new-on-full-host #7: key (r, "a", "m") placed on h2 naming admission 3, which is not that host's admission of this key`,
      `route-new-on-full-host #8: key (other, "a", "m") placed on h1 naming admission 4, which is not that host's admission of this key`,
      `route-new-on-full-host #9: key (r, "z", "m") placed on h1 naming admission 5, which is not that host's admission of this key`,
      `route-new-on-full-host #10: key (r, "a", "n") placed on h1 naming admission 6, which is not that host's admission of this key`,
    ]);
  });

  it("refuses an admission used after the route moved past its place", async () => {
    expect(
      await findings([
        cappedHost("h1", 0, 5),
        admitted("h1", 1, { route: "r", routeSeq: 0 }),
        seen("r", 2, "h1"),
        placed("r", 3, { host: "h1", admission: 2 }),
      ]),
    ).toEqual([
      `route-new-on-full-host #4: key (r, "", "m") placed on h1 with admission 2 for the route's event after 0, but the route was at 3`,
    ]);
  });
});

describe("route leases counted per host", () => {
  it("moves a lease's count with the lease, and drops it when the lease goes", async () => {
    expect(
      await findings([
        cappedHost("h1", 0, 1),
        cappedHost("h2", 0, 1),
        placed("r", 1, { fp: "a", host: "h1" }),
        // The lease moves to h2: h1 has room again, h2 is full.
        placed("r", 2, { fp: "a", host: "h2", from: "h1", reason: "unhealthy" }),
        placed("r", 3, { fp: "b", host: "h1" }),
        placed("r", 4, { fp: "c", host: "h2" }),
        // Both leases on h2 expire: h2 has room again.
        event("route", "r", "RouteLeaseExpired", 5, { fp: "a", model: "m", host: "h2" }),
        event("route", "r", "RouteLeaseExpired", 5, { fp: "c", model: "m", host: "h2" }),
        placed("r", 6, { fp: "d", host: "h2" }),
        placed("r", 7, { fp: "e", host: "h2" }),
      ]),
    ).toEqual([
      `route-new-on-full-host #6: key (r, "c", "m") newly placed on h2, which is full (1 active leases, maxLeases 1)`,
      `route-new-on-full-host #10: key (r, "e", "m") newly placed on h2, which is full (1 active leases, maxLeases 1)`,
    ]);
  });

  it("counts an admission open until its route moves past its place, and the cap is reached only at maxLeases", async () => {
    expect(
      await findings([
        cappedHost("h1", 0, 2),
        placed("r0", 1, { fp: "a", host: "h1" }),
        // One active lease and no open admission: room for one more.
        admitted("h1", 2, { route: "r1", routeSeq: 0 }),
        // One active, one open: full.
        admitted("h1", 3, { route: "r2", routeSeq: 0 }),
      ]),
    ).toEqual([`host-admitted-when-full #4: admitted key (r2, "", "m") with 1 active leases and 1 open admissions, maxLeases 2`]);
  });
});

describe("placements on unhealthy hosts", () => {
  it("names an inherited placement as such, and does not check an operator's move (ctx)", async () => {
    expect(
      await findings([
        hostSet("h1", 0, false),
        placed("r", 1, { fp: "a", host: "h1", reused: true }),
        placed("r2", 2, { fp: "a", host: "h1", reason: "ctx" }),
      ]),
    ).toEqual([`route-placed-on-unhealthy-host #2: key (r, "a", "m") placed (new, inherited) on h1, which is unhealthy`]);
  });

  it("checks the leases a pin displaces", async () => {
    expect(
      await findings([
        hostSet("h1", 0, true),
        event("route", "r", "RoutePinned", 1, { host: "h1", displaced: [{ fp: "a", model: "m", host: "h2" }] }),
      ]),
    ).toEqual([`route-unknown-lease #2: displacement of key (r, "a", "m") on h2, which has no lease`]);
  });
});

describe("proxy leases", () => {
  it("does not count a lease re-granted under its own id twice against the cap", async () => {
    expect(await findings([register("p", 0, 1), grant("p", 1, "l1", 10_000), grant("p", 2, "l1", 10_000)])).toEqual([
      `proxy-lease-id-reused #3: lease id l1 was already granted on proxy p`,
    ]);
  });

  it("takes a lease id as reused until retention after its expiry, inclusive", async () => {
    // l1 expires at 2 s; retention is 60 s: reused at 62 s, not after.
    expect(
      await findings([
        register("p", 0, 5),
        register("q", 0, 5),
        grant("p", 1, "l1"),
        grant("q", 62, "l1"),
        grant("p", 1, "l2"),
        grant("q", 62.001, "l2"),
      ]),
    ).toEqual([`proxy-lease-id-reused #4: lease id l1 was already granted on proxy p`]);
  });

  it("says why a released lease does not resolve: granted on another proxy, or past retention", async () => {
    expect(
      await findings([
        register("p", 0, 5),
        register("q", 0, 5),
        grant("p", 1, "l1"),
        event("proxy", "q", "ProxyLeaseReleased", 2, { leaseId: "l1" }),
        // A later grant on p prunes l1 (expired at 2 s, retention 60 s) from p's state.
        grant("p", 100, "l2"),
        event("proxy", "p", "ProxyLeaseReleased", 101, { leaseId: "l1" }),
      ]),
    ).toEqual([
      `proxy-release-unknown-lease #4: release of lease l1, which was granted on proxy p, not this one`,
      `proxy-release-unknown-lease #6: release of lease l1, which is past retention`,
    ]);
  });
});

describe("lock edges", () => {
  it("holds a lease until, not at, its expiry; a TTL of exactly maxTtlMs is allowed", async () => {
    expect(
      await findings([
        acquire("l", 0, { owner: "a", generation: 1, ttlMs: 30_000 }),
        acquire("l", 30, { owner: "b", generation: 2, previousOwner: "a", ttlMs: 30_001 }),
      ]),
    ).toEqual([`lock-lease-beyond-max-ttl #2: LockAcquired writes a lease ending 30001 ms after the event, above maxTtlMs 30000`]);
  });

  it("words a previousOwner on a free lock, and a grant to a place that is not in the queue", async () => {
    expect(await findings([acquire("l", 0, { owner: "a", generation: 1, previousOwner: "ghost", waiterSeq: 7 })])).toEqual([
      `lock-queue-order #1: granted to the place queued at sequence 7, which is not in the queue`,
      `lock-previous-owner-mismatch #1: previousOwner "ghost", but the lock was free`,
    ]);
  });

  it("grants the head waiter in its claim window without a finding", async () => {
    expect(
      await findings([
        acquire("l", 0, { owner: "a", generation: 1, ttlMs: 1000 }),
        event("lock", "l", "LockWaiterQueued", 0.5, { owner: "w", until: at(60), claimWindowMs: 2000 }),
        acquire("l", 1.5, { owner: "w", generation: 2, previousOwner: "a", waiterSeq: 2 }),
      ]),
    ).toEqual([]);
  });
});

/** Audits stored messages as given (sequences and times may go backwards), each violation as `say` words it. */
async function violationsOf(stored: readonly StoredMessage[], say: (v: Violation) => string): Promise<string[]> {
  const violations: string[] = [];
  await auditStream(
    {
      [Symbol.asyncIterator]: () => {
        const it = stored[Symbol.iterator]();
        return { next: () => Promise.resolve(it.next()) };
      },
    },
    subjects,
    { ...CRAFT_AUDIT, onViolation: (v) => violations.push(say(v)) },
  );
  return violations;
}

describe("order along a subject", () => {
  it("compares each sequence and instant with the highest before it, not the last", async () => {
    const messages = [0, 10, 5, 7].map((s, i) => event("host", "h", "HostStateSet", s, { healthy: i % 2 === 0, draining: false }));
    const stored = messages.map((m, i): StoredMessage => ({
      seq: [1, 5, 3, 4][i]!,
      subject: m.subject(subjects),
      payload: m.payload,
      time: CRAFT_T0 + i,
    }));
    expect(await violationsOf(stored, (v) => `${v.rule} #${v.seq}`)).toEqual([
      "subject-sequence #3",
      "subject-at-decreases #3",
      "subject-sequence #4",
      "subject-at-decreases #4",
    ]);
  });
});

describe("rule edges the one-history-per-rule tests leave open", () => {
  it("takes a sequence repeated on a subject as out of order, and says which", async () => {
    const message = event("host", "h", "HostStateSet", 0, { healthy: true, draining: false });
    const stored = [1, 1].map((seq, i): StoredMessage => ({
      seq,
      subject: message.subject(subjects),
      payload: message.payload,
      time: CRAFT_T0 + i,
    }));
    expect(await violationsOf(stored, (v) => `${v.rule} #${v.seq}: ${v.message}`)).toEqual([
      `subject-sequence #1: sequence 1 follows 1 on ${subjects.event("host", "h")}`,
    ]);
  });

  it("finds a grant to a place not in the queue while another waiter is queued behind a live lease", async () => {
    expect(
      await findings([
        acquire("l", 0, { owner: "a", generation: 1 }),
        event("lock", "l", "LockWaiterQueued", 1, { owner: "w", until: at(60), claimWindowMs: 2000 }),
        acquire("l", 5, { owner: "b", generation: 2, previousOwner: "a", waiterSeq: 7 }),
      ]),
    ).toEqual([
      `lock-queue-order #3: granted to the place queued at sequence 7, which is not in the queue`,
      `lock-two-holders #3: acquired by b (generation 2) while a holds generation 1 until ${expires(0, 10_000)}`,
    ]);
  });

  it("finds a release by the holder naming another generation", async () => {
    expect(
      await findings([
        acquire("l", 0, { owner: "a", generation: 1 }),
        event("lock", "l", "LockReleased", 1, { owner: "a", generation: 2 }),
      ]),
    ).toEqual([`lock-release-not-holder #2: released by a at generation 2, but the lease is a's at generation 1`]);
  });

  it("names the target's cooldown, not a global one that ended at the grant's instant", async () => {
    const cooldown = (s: number, target: string, forS: number) =>
      event("proxy", "p", "ProxyCooldownStarted", s, { leaseId: "l1", result: "rate_limited", target, untilAt: at(s + forS) });
    expect(
      await findings([
        register("p", 0, 5),
        grant("p", 1, "l1"),
        cooldown(1.5, "", 1.5),
        cooldown(1.5, "t", 10),
        event("proxy", "p", "ProxyLeaseGranted", 3, { leaseId: "l2", target: "t", ttlMs: 1000, expiresAt: expires(3, 1000) }),
      ]),
    ).toEqual([`proxy-grant-in-cooldown #5: lease l2 for target "t" granted during the cooldown for "t" (until ${at(11.5)})`]);
  });

  it("counts a lease re-granted under its own id at its expiry as a new lease against the cap", async () => {
    // l1 ends at 2 s, when l2 is granted; granted again at 2 s, the old l1 no longer counts: with l2 that makes 2 leases.
    expect(await findings([register("p", 0, 1), grant("p", 1, "l1"), grant("p", 2, "l2", 10_000), grant("p", 2, "l1")])).toEqual([
      `proxy-over-capacity #4: lease l1 makes 2 unexpired leases, above maxLeases 1`,
      `proxy-lease-id-reused #4: lease id l1 was already granted on proxy p`,
    ]);
  });

  it("says a lease released on its own proxy was released, up to retention after its expiry inclusive", async () => {
    // l1 ends at 2 s; retention is 60 s: at 62 s its release is still explained as a release.
    expect(
      await findings([
        register("p", 0, 5),
        grant("p", 1, "l1"),
        event("proxy", "p", "ProxyLeaseReleased", 1.5, { leaseId: "l1" }),
        event("proxy", "p", "ProxyLeaseReleased", 62, { leaseId: "l1" }),
      ]),
    ).toEqual([`proxy-release-unknown-lease #4: release of lease l1, which was released`]);
  });

  it("finds nothing in a touch of a lease the route has", async () => {
    expect(
      await findings([
        hostSet("h1", 0, true),
        placed("r", 1, { host: "h1" }),
        event("route", "r", "RouteLeaseTouched", 2, { fp: "", model: "m" }),
      ]),
    ).toEqual([]);
  });
});

describe("the lease id index", () => {
  /** Grants of `ids` on proxy `proxy` at `s` seconds, each ending a second later (the proxy is never registered). */
  const grants = (proxy: string, s: number, ids: readonly string[]) => ids.map((id) => grant(proxy, s, id));
  const fillers = (from: number, n: number) => Array.from({ length: n }, (_, i) => `f${from + i}`);
  const release = (proxy: string, s: number, leaseId: string) => event("proxy", proxy, "ProxyLeaseReleased", s, { leaseId });
  const notUnregistered = (found: readonly string[]) => found.filter((f) => !f.startsWith("proxy-grant-unregistered"));

  it("forgets, once it holds more than 1024 ids, exactly the ids past retention", async () => {
    // 1025 ids by the grant of "trigger" at 100 s; retention 60 s. "old" and the fillers ended by 2 s, "edge" at 40 s
    // (retention ends at 100 s, inclusive), "live" at 109 s.
    const found = notUnregistered(
      await findings([
        ...grants("p", 0, ["old"]),
        ...grants("p", 1, fillers(0, 1021)),
        ...grants("p", 39, ["edge"]),
        grant("p", 99, "live", 10_000),
        ...grants("p", 100, ["trigger"]),
        ...grants("q", 100, ["edge", "live"]),
        release("q", 100, "old"),
      ]),
    );
    expect(found).toEqual([
      `proxy-lease-id-reused #1026: lease id edge was already granted on proxy p`,
      `proxy-lease-id-reused #1027: lease id live was already granted on proxy p`,
      `proxy-release-unknown-lease #1028: release of lease old, which was never granted (or is past retention)`,
    ]);
  });

  it("is scanned only when it has doubled since the last scan, and at least past 1024 ids", async () => {
    // f0 ends at 1 s; f1..f1023 are granted at 100 s: 1024 ids, no scan yet, so f0 is still known.
    // f1024 makes 1025: the scan forgets f0 and leaves 1024 ids, so the next one is past 2048.
    const found = notUnregistered(
      await findings([
        ...grants("p", 0, ["f0"]),
        ...grants("p", 100, fillers(1, 1023)),
        release("q", 100, "f0"),
        ...grants("p", 100, ["f1024"]),
        release("q", 100, "f0"),
        // By 200 s all of f1..f1024 are past retention, but 1026 ids are far from 2048: f1 is still known.
        ...grants("p", 200, ["g"]),
        release("q", 200, "f1"),
      ]),
    );
    expect(found).toEqual([
      `proxy-release-unknown-lease #1025: release of lease f0, which was granted on proxy p, not this one`,
      `proxy-release-unknown-lease #1027: release of lease f0, which was never granted (or is past retention)`,
      `proxy-release-unknown-lease #1029: release of lease f1, which was granted on proxy p, not this one`,
    ]);
  });
});
