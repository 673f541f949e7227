/**
 * The Proxies section of docs/protocol.md end to end through the real proxy module
 * (selector, read model, actors, turn machine) on an in-memory log and a
 * manual clock: every selection rule and tie-break, exact stats, cooldown
 * scoping, retention, release/report idempotency, list and counts, requestId
 * idempotency, restarts, and independence from when the sweep runs.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/actors/clock.ts";
import { type TurnResult } from "../../src/actors/actor-runtime.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { type AppendOptions, type AppendResult } from "../../src/events/event-log.ts";
import { PROXY_T0, startProxyHarness, type ProxyHarness, type ProxyHarnessOptions } from "../support/proxy-harness.ts";

const S = 1000;
const COOLDOWN_MS = 60 * S;
const T0 = PROXY_T0;
const iso = (ms: number) => new Date(ms).toISOString();

const harnesses: ProxyHarness[] = [];
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.stop();
});

async function service(options: ProxyHarnessOptions = {}): Promise<ProxyHarness> {
  const h = await startProxyHarness({ cooldownMs: COOLDOWN_MS, ...options });
  harnesses.push(h);
  return h;
}

interface AcquireReply {
  lease: { id: string; proxy: string; target: string; expiresAt: string };
  stats: { considered: number; unhealthy: number; inCooldown: number; atCapacity: number };
}

function ok<T = Record<string, unknown>>(result: TurnResult): T {
  if (!result.ok) throw new Error(`expected success, got ${result.rejection.code}: ${result.rejection.message}`);
  return result.reply as T;
}

function rejected(result: TurnResult, code: string): Readonly<Record<string, unknown>> | undefined {
  if (result.ok) throw new Error(`expected ${code}, got ${JSON.stringify(result.reply)}`);
  expect(result.rejection.code, result.rejection.message).toBe(code);
  expect(result.rejection.message.length).toBeGreaterThan(0);
  return result.rejection.details;
}

async function register(h: ProxyHarness, proxy: string, fields: Record<string, unknown> = {}): Promise<void> {
  ok(await h.call("register", { proxy, maxLeases: 10, ...fields }));
}

async function acquire(h: ProxyHarness, body: Record<string, unknown> = {}): Promise<AcquireReply> {
  return ok<AcquireReply>(await h.call("acquire", { ttlMs: 30 * S, ...body }));
}

const stats = (considered: number, unhealthy = 0, inCooldown = 0, atCapacity = 0) => ({ considered, unhealthy, inCooldown, atCapacity });

describe("selection order", () => {
  it("picks the proxy with the fewest active leases first", async () => {
    const h = await service();
    await register(h, "a", { latencyMs: 1 });
    await register(h, "b", { latencyMs: 50 });
    // Both free: a wins on latency; then b has fewer leases, whatever its latency.
    expect((await acquire(h)).lease.proxy).toBe("a");
    expect((await acquire(h)).lease.proxy).toBe("b");
    expect((await acquire(h)).lease.proxy).toBe("a");
  });

  it("breaks a tie in load by the lowest latencyMs", async () => {
    const h = await service();
    await register(h, "a", { latencyMs: 30 });
    await register(h, "b", { latencyMs: 10 });
    await register(h, "c", { latencyMs: 20 });
    expect((await acquire(h)).lease.proxy).toBe("b");
    expect((await acquire(h)).lease.proxy).toBe("c");
    expect((await acquire(h)).lease.proxy).toBe("a");
  });

  it("breaks a tie in load and latency by the smallest name in UTF-16 code units (JS <)", async () => {
    const h = await service();
    // By UTF-16 code units: "B" < "a" < "😀" (0xD83D) < "\uFFFD"; by UTF-8 bytes "\uFFFD" (EF) would come before "😀" (F0).
    for (const name of ["\uFFFD", "😀", "a", "B"]) await register(h, name);
    const order = [];
    for (let i = 0; i < 4; i++) order.push((await acquire(h)).lease.proxy);
    expect(order).toEqual(["B", "a", "😀", "\uFFFD"]);
  });

  it("counts only unexpired, unreleased leases as load", async () => {
    const h = await service();
    await register(h, "a");
    await register(h, "b");
    const first = await acquire(h, { ttlMs: 5 * S });
    expect(first.lease.proxy).toBe("a");
    const onB = await acquire(h);
    expect(onB.lease.proxy).toBe("b");
    // a's lease expires: a has 0, b has 1.
    h.clock.advance(5 * S);
    expect((await acquire(h)).lease.proxy).toBe("a");
    // Both have 1; release b's: b has 0, a has 1.
    ok(await h.call("release", { leaseId: onB.lease.id }));
    expect((await acquire(h)).lease.proxy).toBe("b");
  });

  it("never leases a proxy with maxLeases: 0, and counts it as at capacity", async () => {
    const h = await service();
    await register(h, "zero", { maxLeases: 0 });
    const details = rejected(await h.call("acquire", { ttlMs: S }), "NO_MATCH");
    expect(details).toEqual({ stats: stats(1, 0, 0, 1) });
    await register(h, "one", { maxLeases: 1, latencyMs: 100 });
    const reply = await acquire(h);
    expect(reply.lease.proxy).toBe("one");
    expect(reply.stats).toEqual(stats(2, 0, 0, 1));
  });
});

describe("stats", () => {
  it("are exact on success and on NO_MATCH, each proxy counted once in the order unhealthy, cooldown, capacity", async () => {
    const h = await service();
    await register(h, "sick", { healthy: false, maxLeases: 0 }); // unhealthy (and full): counts as unhealthy only
    await register(h, "cool", { maxLeases: 5 });
    await register(h, "full", { maxLeases: 1 });
    await register(h, "free", { maxLeases: 1, latencyMs: 500 });
    // Put "cool" in global cooldown; fill "full".
    const onCool = await acquire(h, { candidates: ["cool"] });
    ok(await h.call("report", { leaseId: onCool.lease.id, result: "banned" }));
    expect((await acquire(h, { candidates: ["full"] })).lease.proxy).toBe("full");
    // Now: considered 4, unhealthy 1, in cooldown 1 (cool; also not full), at capacity 1 (full), eligible 1 (free).
    const reply = await acquire(h);
    expect(reply.lease.proxy).toBe("free");
    expect(reply.stats).toEqual(stats(4, 1, 1, 1));
    // And with free full too: NO_MATCH, eligible 0.
    expect(rejected(await h.call("acquire", { ttlMs: S }), "NO_MATCH")).toEqual({ stats: stats(4, 1, 1, 2) });
  });

  it("a proxy in cooldown and at capacity counts as in cooldown", async () => {
    const h = await service();
    await register(h, "p", { maxLeases: 1 });
    const lease = await acquire(h);
    ok(await h.call("report", { leaseId: lease.lease.id, result: "rate_limited" }));
    expect(rejected(await h.call("acquire", { ttlMs: S }), "NO_MATCH")).toEqual({ stats: stats(1, 0, 1, 0) });
  });

  it("NO_MATCH with no proxy registered has every count zero", async () => {
    const h = await service();
    expect(rejected(await h.call("acquire", { ttlMs: S }), "NO_MATCH")).toEqual({ stats: stats(0) });
  });
});

describe("candidates and labels", () => {
  it("chooses only among the candidates given", async () => {
    const h = await service();
    await register(h, "a");
    await register(h, "b");
    await register(h, "c");
    const reply = await acquire(h, { candidates: ["c", "b"] });
    expect(reply.lease.proxy).toBe("b");
    expect(reply.stats).toEqual(stats(2));
  });

  it("is UNKNOWN_PROXY when a candidate is not registered, naming only those", async () => {
    const h = await service();
    await register(h, "a");
    await register(h, "gone");
    ok(await h.call("remove", { proxy: "gone" }));
    const details = rejected(await h.call("acquire", { ttlMs: S, candidates: ["a", "nope", "gone"] }), "UNKNOWN_PROXY");
    expect(details).toEqual({ proxies: ["nope", "gone"] });
  });

  it("counts a candidate named twice once", async () => {
    const h = await service();
    await register(h, "a", { maxLeases: 0 });
    expect(rejected(await h.call("acquire", { ttlMs: S, candidates: ["a", "a"] }), "NO_MATCH")).toEqual({ stats: stats(1, 0, 0, 1) });
  });

  it("candidates: [] considers nothing", async () => {
    const h = await service();
    await register(h, "a");
    expect(rejected(await h.call("acquire", { ttlMs: S, candidates: [] }), "NO_MATCH")).toEqual({ stats: stats(0) });
  });

  it("considers only proxies whose labels hold every requested pair", async () => {
    const h = await service();
    await register(h, "eu-1", { labels: { region: "eu", tier: "gold" }, latencyMs: 9 });
    await register(h, "eu-2", { labels: { region: "eu" }, latencyMs: 1 });
    await register(h, "us-1", { labels: { region: "us", tier: "gold" } });
    const gold = await acquire(h, { labels: { region: "eu", tier: "gold" } });
    expect(gold.lease.proxy).toBe("eu-1");
    expect(gold.stats).toEqual(stats(1));
    const eu = await acquire(h, { labels: { region: "eu" } });
    expect(eu.lease.proxy).toBe("eu-2");
    expect(eu.stats).toEqual(stats(2));
    expect(rejected(await h.call("acquire", { ttlMs: S, labels: { region: "ap" } }), "NO_MATCH")).toEqual({ stats: stats(0) });
  });

  it("treats a label named like an Object.prototype member as an ordinary label", async () => {
    const h = await service();
    await register(h, "odd", { labels: JSON.parse('{"__proto__":"x","toString":"y"}') as Record<string, string> });
    await register(h, "plain");
    const reply = ok<AcquireReply>(await h.call("acquire", '{"ttlMs":1000,"labels":{"__proto__":"x"}}'));
    expect(reply.lease.proxy).toBe("odd");
    expect(reply.stats).toEqual(stats(1));
    expect(rejected(await h.call("acquire", '{"ttlMs":1000,"labels":{"toString":"z"}}'), "NO_MATCH")).toEqual({ stats: stats(0) });
  });

  it("never chooses an unhealthy proxy", async () => {
    const h = await service();
    await register(h, "a", { healthy: false });
    await register(h, "b", { latencyMs: 99 });
    const reply = await acquire(h);
    expect(reply.lease.proxy).toBe("b");
    expect(reply.stats).toEqual(stats(2, 1));
  });
});

describe("cooldowns", () => {
  it("a target-scoped cooldown skips the proxy only for that target", async () => {
    const h = await service();
    await register(h, "a");
    await register(h, "b", { latencyMs: 10 });
    const lease = await acquire(h, { target: "shop.example" });
    expect(lease.lease.proxy).toBe("a");
    const report = ok(await h.call("report", { leaseId: lease.lease.id, result: "rate_limited" }));
    expect(report).toEqual({ cooldownUntilAt: iso(T0 + COOLDOWN_MS) });
    ok(await h.call("release", { leaseId: lease.lease.id }));

    const same = await acquire(h, { target: "shop.example" });
    expect(same.lease.proxy).toBe("b");
    expect(same.stats).toEqual(stats(2, 0, 1, 0));
    ok(await h.call("release", { leaseId: same.lease.id }));
    expect((await acquire(h, { target: "news.example" })).lease.proxy).toBe("a");
    expect((await acquire(h, { target: "" })).lease.proxy).toBe("b");
  });

  it("a global cooldown skips the proxy for every target", async () => {
    const h = await service();
    await register(h, "a");
    await register(h, "b", { latencyMs: 10 });
    const lease = await acquire(h);
    ok(await h.call("report", { leaseId: lease.lease.id, result: "banned" }));
    for (const target of ["", "shop.example", "news.example"]) {
      const reply = await acquire(h, { target });
      expect(reply.lease.proxy, target).toBe("b");
      expect(reply.stats.inCooldown).toBe(1);
    }
  });

  it("a report without a target falls back to the lease's target; with one, uses it", async () => {
    const h = await service();
    await register(h, "a");
    const one = await acquire(h, { target: "x.example" });
    const fallback = ok(await h.call("report", { leaseId: one.lease.id, result: "rate_limited" }));
    h.clock.advance(S);
    const explicit = ok(await h.call("report", { leaseId: one.lease.id, result: "banned", target: "y.example" }));
    // target: "" means none given, as in the seed.
    h.clock.advance(S);
    const empty = ok(await h.call("report", { leaseId: one.lease.id, result: "banned", target: "" }));
    expect([fallback, explicit, empty]).toEqual([
      { cooldownUntilAt: iso(T0 + COOLDOWN_MS) },
      { cooldownUntilAt: iso(T0 + S + COOLDOWN_MS) },
      { cooldownUntilAt: iso(T0 + 2 * S + COOLDOWN_MS) },
    ]);
    const list = ok<{ proxies: { cooldowns: unknown[] }[] }>(await h.call("list", {}));
    expect(list.proxies[0]!.cooldowns).toEqual([
      { target: "x.example", untilAt: iso(T0 + 2 * S + COOLDOWN_MS), streak: 2 },
      { target: "y.example", untilAt: iso(T0 + S + COOLDOWN_MS), streak: 1 },
    ]);
  });

  it("ok records nothing; banned and rate_limited both record a cooldown of cooldownMs", async () => {
    const h = await service();
    await register(h, "a");
    await register(h, "b");
    const onA = await acquire(h, { candidates: ["a"] });
    const onB = await acquire(h, { candidates: ["b"] });
    const before = h.events().length;
    expect(ok(await h.call("report", { leaseId: onA.lease.id, result: "ok" }))).toEqual({});
    expect(h.events()).toHaveLength(before);
    const rl = ok(await h.call("report", { leaseId: onA.lease.id, result: "rate_limited" }));
    const banned = ok(await h.call("report", { leaseId: onB.lease.id, result: "banned" }));
    expect(rl).toEqual({ cooldownUntilAt: iso(T0 + COOLDOWN_MS) });
    expect(banned).toEqual(rl);
    const events = h.events().slice(before);
    expect(events.map((e) => [e.event.type, e.event.id, (e.event.data as { result: string }).result])).toEqual([
      ["ProxyCooldownStarted", "a", "rate_limited"],
      ["ProxyCooldownStarted", "b", "banned"],
    ]);
    expect(rejected(await h.call("acquire", { ttlMs: S }), "NO_MATCH")).toEqual({ stats: stats(2, 0, 2, 0) });
  });

  it("a cooldown ends cooldownMs after the report", async () => {
    const h = await service();
    await register(h, "a");
    const lease = await acquire(h);
    ok(await h.call("report", { leaseId: lease.lease.id, result: "banned" }));
    h.clock.advance(COOLDOWN_MS - 1);
    rejected(await h.call("acquire", { ttlMs: S }), "NO_MATCH");
    h.clock.advance(1);
    expect((await acquire(h)).lease.proxy).toBe("a");
  });
});

describe("release, report and retention", () => {
  it("report is UNKNOWN_LEASE at once after release", async () => {
    const h = await service();
    await register(h, "a");
    const lease = await acquire(h);
    ok(await h.call("release", { leaseId: lease.lease.id }));
    rejected(await h.call("report", { leaseId: lease.lease.id, result: "ok" }), "UNKNOWN_LEASE");
  });

  it("an expired lease answers report until cooldownMs after its expiry, then UNKNOWN_LEASE", async () => {
    const h = await service();
    await register(h, "a");
    const lease = await acquire(h, { ttlMs: 10 * S });
    h.clock.advance(10 * S + COOLDOWN_MS);
    expect(ok(await h.call("report", { leaseId: lease.lease.id, result: "ok" }))).toEqual({});
    h.clock.advance(1);
    rejected(await h.call("report", { leaseId: lease.lease.id, result: "rate_limited" }), "UNKNOWN_LEASE");
  });

  it("report of an id never granted is UNKNOWN_LEASE", async () => {
    const h = await service();
    rejected(await h.call("report", { leaseId: "made-up", result: "ok" }), "UNKNOWN_LEASE");
  });

  it("release answers {} for any well-formed id, and records only the first release of a resolvable lease", async () => {
    const h = await service();
    await register(h, "a");
    const lease = await acquire(h);
    const before = h.events().length;
    expect(ok(await h.call("release", { leaseId: lease.lease.id }))).toEqual({});
    expect(ok(await h.call("release", { leaseId: lease.lease.id }))).toEqual({});
    expect(ok(await h.call("release", { leaseId: "never-granted" }))).toEqual({});
    expect(
      h
        .events()
        .slice(before)
        .map((e) => e.event.type),
    ).toEqual(["ProxyLeaseReleased"]);
  });

  it("a removed proxy is not listed, counted or chosen, but its leases keep resolving and count again when it is back", async () => {
    const h = await service();
    await register(h, "a", { maxLeases: 1 });
    await register(h, "b", { maxLeases: 5, latencyMs: 9 });
    const onA = await acquire(h);
    expect(onA.lease.proxy).toBe("a");
    ok(await h.call("remove", { proxy: "a" }));
    expect(ok(await h.call("counts", {}))).toEqual({ counts: {} });
    expect(ok<{ proxies: { proxy: string }[] }>(await h.call("list", {})).proxies.map((p) => p.proxy)).toEqual(["b"]);
    expect((await acquire(h)).stats).toEqual(stats(1));
    // Its lease still resolves; a cooldown reported on it is kept for when it comes back.
    expect(ok(await h.call("report", { leaseId: onA.lease.id, result: "banned", target: "t" }))).toEqual({
      cooldownUntilAt: iso(T0 + COOLDOWN_MS),
    });
    await register(h, "a", { maxLeases: 2 });
    const list = ok<{ proxies: { proxy: string; active: number; cooldowns: unknown[] }[] }>(await h.call("list", {}));
    expect(list.proxies.find((p) => p.proxy === "a")).toMatchObject({
      active: 1,
      cooldowns: [{ target: "t", untilAt: iso(T0 + COOLDOWN_MS) }],
    });
    ok(await h.call("release", { leaseId: onA.lease.id }));
    expect(ok(await h.call("counts", {}))).toEqual({ counts: { b: 1 } });
  });
});

describe("register and remove", () => {
  it("remove of a proxy never registered, or removed already, is UNKNOWN_PROXY", async () => {
    const h = await service();
    expect(rejected(await h.call("remove", { proxy: "x" }), "UNKNOWN_PROXY")).toEqual({ proxies: ["x"] });
    await register(h, "x");
    expect(ok(await h.call("remove", { proxy: "x" }))).toEqual({ proxy: "x" });
    expect(rejected(await h.call("remove", { proxy: "x" }), "UNKNOWN_PROXY")).toEqual({ proxies: ["x"] });
  });

  it("register again replaces every field, omitted ones taking their defaults, and records nothing when nothing changes", async () => {
    const h = await service();
    expect(ok(await h.call("register", { proxy: "p", maxLeases: 2, latencyMs: 7, labels: { a: "1" }, healthy: false }))).toEqual({
      proxy: "p",
    });
    expect(ok(await h.call("register", { proxy: "p", maxLeases: 3 }))).toEqual({ proxy: "p" });
    const n = h.events().length;
    expect(ok(await h.call("register", { proxy: "p", maxLeases: 3, latencyMs: 0, labels: {}, healthy: true }))).toEqual({ proxy: "p" });
    expect(h.events()).toHaveLength(n);
    const list = ok<{ proxies: unknown[] }>(await h.call("list", {}));
    expect(list.proxies).toEqual([{ proxy: "p", maxLeases: 3, latencyMs: 0, labels: {}, healthy: true, active: 0, cooldowns: [] }]);
  });
});

describe("list and counts", () => {
  it("list is sorted by name (JS <) with active leases and only active cooldowns; counts omit idle proxies", async () => {
    const h = await service();
    await register(h, "b", { maxLeases: 2, latencyMs: 3, labels: { k: "v" } });
    await register(h, "a", { maxLeases: 1, healthy: false });
    await register(h, "C", { maxLeases: 4 });
    const onB = await acquire(h, { candidates: ["b"], ttlMs: 10 * S });
    await acquire(h, { candidates: ["b"], ttlMs: 90 * S });
    ok(await h.call("report", { leaseId: onB.lease.id, result: "rate_limited", target: "z" }));
    h.clock.advance(30 * S);
    ok(await h.call("report", { leaseId: onB.lease.id, result: "banned" }));
    expect(ok(await h.call("list", {}))).toEqual({
      proxies: [
        { proxy: "C", maxLeases: 4, latencyMs: 0, labels: {}, healthy: true, active: 0, cooldowns: [] },
        { proxy: "a", maxLeases: 1, latencyMs: 0, labels: {}, healthy: false, active: 0, cooldowns: [] },
        {
          proxy: "b",
          maxLeases: 2,
          latencyMs: 3,
          labels: { k: "v" },
          healthy: true,
          active: 1,
          cooldowns: [
            { target: "", untilAt: iso(T0 + 30 * S + COOLDOWN_MS), streak: 1 },
            { target: "z", untilAt: iso(T0 + COOLDOWN_MS), streak: 1 },
          ],
        },
      ],
    });
    expect(ok(await h.call("counts", {}))).toEqual({ counts: { b: 1 } });
    h.clock.advance(COOLDOWN_MS - 30 * S);
    const later = ok<{ proxies: { proxy: string; cooldowns: unknown[] }[] }>(await h.call("list", {}));
    expect(later.proxies.find((p) => p.proxy === "b")!.cooldowns).toEqual([
      { target: "", untilAt: iso(T0 + 30 * S + COOLDOWN_MS), streak: 1 },
    ]);
    h.clock.advance(60 * S);
    expect(ok(await h.call("counts", {}))).toEqual({ counts: {} });
  });
});

describe("idempotency of acquire (requestId spans proxies)", () => {
  it("a repeat within the dedup window returns the first answer and grants nothing more, also after a restart", async () => {
    const h = await service({ dedupWindowMs: 10 * S });
    await register(h, "a", { maxLeases: 1 });
    await register(h, "b", { maxLeases: 1 });
    const first = await acquire(h, { requestId: "r-1" });
    const grants = () => h.events().filter((e) => e.event.type === "ProxyLeaseGranted").length;
    expect(grants()).toBe(1);
    h.clock.advance(5 * S);
    expect(await acquire(h, { requestId: "r-1" })).toEqual(first);
    await h.restart();
    expect(await acquire(h, { requestId: "r-1" })).toEqual(first);
    expect(grants()).toBe(1);
    // The dedup window is over: it is a new acquisition.
    h.clock.advance(5 * S + 1);
    const again = await acquire(h, { requestId: "r-1" });
    expect(again.lease.id).not.toBe(first.lease.id);
    expect(again.lease.proxy).toBe("b");
    expect(grants()).toBe(2);
  });

  it("a durable acquisition delivered again answers from the grant made since it was sent, however long ago", async () => {
    const h = await service({ dedupWindowMs: 10 * S });
    await register(h, "a", { maxLeases: 1 });
    await register(h, "b", { maxLeases: 1 });
    const sentAt = h.clock.now();
    const first = ok<AcquireReply>(await h.call("acquire", { ttlMs: 60 * S, requestId: "d-1" }, { requestedAt: sentAt }));
    // Redelivered after an outage far longer than the dedup window, and after a restart.
    h.clock.advance(30 * S);
    await h.restart();
    expect(ok(await h.call("acquire", { ttlMs: 60 * S, requestId: "d-1" }, { requestedAt: sentAt }))).toEqual(first);
    // The same requestId sent anew (later than the grant) is a new acquisition.
    const anew = ok<AcquireReply>(await h.call("acquire", { ttlMs: 60 * S, requestId: "d-1" }, { requestedAt: h.clock.now() }));
    expect(anew.lease.id).not.toBe(first.lease.id);
  });

  it("a failed acquisition is decided again", async () => {
    const h = await service();
    rejected(await h.call("acquire", { ttlMs: S, requestId: "r-2" }), "NO_MATCH");
    await register(h, "a");
    expect((await acquire(h, { requestId: "r-2" })).lease.proxy).toBe("a");
  });

  it("concurrent repeats on one instance wait for the first and grant one lease", async () => {
    const clock = new ManualClock(T0);
    const log = new HeldLog({ now: () => clock.now() });
    const h = await service({ clock, log });
    // Five free proxies: were the repeats not serialized, they would spread over them.
    for (const name of ["a", "b", "c", "d", "e"]) await register(h, name, { maxLeases: 5 });
    log.holding = true;
    const replies = Promise.all(Array.from({ length: 5 }, () => acquire(h, { requestId: "r-3" })));
    await quiescence();
    expect(log.held).toHaveLength(1);
    log.open();
    const leases = await replies;
    expect(new Set(leases.map((r) => r.lease.id)).size).toBe(1);
    expect(h.events().filter((e) => e.event.type === "ProxyLeaseGranted")).toHaveLength(1);
  });
});

/** A log whose appends wait, while `holding`, until the test opens it. */
class HeldLog extends MemoryEventLog {
  holding = false;
  readonly held: (() => void)[] = [];
  override async append(subject: string, payload: Uint8Array, options: AppendOptions): Promise<AppendResult> {
    if (this.holding) await new Promise<void>((resolve) => this.held.push(resolve));
    return super.append(subject, payload, options);
  }
  open(): void {
    this.holding = false;
    for (const resolve of this.held.splice(0)) resolve();
  }
}

/** Resolves once every promise chain that can progress has (the in-memory log has no timers). */
const quiescence = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("caps under concurrency", () => {
  it("a refusal moves on to the next proxy, and no cap is exceeded", async () => {
    const h = await service();
    await register(h, "a", { maxLeases: 1 });
    await register(h, "b", { maxLeases: 1 });
    const replies = await Promise.all(Array.from({ length: 3 }, () => h.call("acquire", { ttlMs: 10 * S })));
    const granted = replies.filter((r) => r.ok).map((r) => ok<AcquireReply>(r).lease.proxy);
    expect(granted.sort()).toEqual(["a", "b"]);
    const refused = replies.filter((r) => !r.ok);
    expect(refused).toHaveLength(1);
    // Counted as what the proxies turned out to be when asked: both full.
    expect(rejected(refused[0]!, "NO_MATCH")).toEqual({ stats: stats(2, 0, 0, 2) });
  });

  it("concurrent acquisitions on one instance spread as if they had come one after another", async () => {
    const h = await service();
    for (const name of ["a", "b", "c", "d"]) await register(h, name, { maxLeases: 10 });
    const replies = await Promise.all(Array.from({ length: 8 }, () => acquire(h)));
    expect(replies.map((r) => r.lease.proxy).sort()).toEqual(["a", "a", "b", "b", "c", "c", "d", "d"]);
  });

  it("two instances on one log racing for a proxy's last slot: one grant, the other is refused and counts it at capacity", async () => {
    const a = await service({ newId: counterIds("A") });
    const b = await service({ log: a.log, clock: a.clock, newId: counterIds("B") });
    await register(a, "p", { maxLeases: 2 });
    expect((await acquire(b)).lease.proxy).toBe("p");
    // Both read models see one free slot on p; both actors decide on it; the stream lets one append.
    const replies = await Promise.all([a.call("acquire", { ttlMs: S }), b.call("acquire", { ttlMs: S })]);
    expect(replies.filter((r) => r.ok)).toHaveLength(1);
    // Counted eligible when ranked, then at capacity when the proxy refused.
    expect(
      rejected(
        replies.find((r) => !r.ok)!,
        "NO_MATCH",
      ),
    ).toEqual({ stats: stats(1, 0, 0, 1) });
    expect(a.events().filter((e) => e.event.type === "ProxyLeaseGranted")).toHaveLength(2);
  });

  it("many concurrent acquisitions on two instances grant exactly the total capacity", async () => {
    const a = await service({ newId: counterIds("A") });
    const b = await service({ log: a.log, clock: a.clock, newId: counterIds("B") });
    for (let i = 0; i < 5; i++) await register(a, `p${i}`, { maxLeases: i % 3 });
    const capacity = [0, 1, 2, 0, 1].reduce((x, y) => x + y, 0);
    const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).call("acquire", { ttlMs: 10 * S })));
    expect(replies.filter((r) => r.ok)).toHaveLength(capacity);
    for (const r of replies.filter((x) => !x.ok)) rejected(r, "NO_MATCH");
    expect(ok(await a.call("counts", {}))).toEqual({ counts: { p1: 1, p2: 2, p4: 1 } });
  });
});

function counterIds(prefix: string): () => string {
  let n = 0;
  return () => `${prefix}-${++n}`;
}

describe("restart and the sweep", () => {
  /** One scripted history; `housekeeping` runs between steps (nothing, sweeps, or restarts). */
  async function script(h: ProxyHarness, housekeeping: () => Promise<void>): Promise<unknown[]> {
    const answers: unknown[] = [];
    const step = async (op: string, body: unknown) => {
      const r = await h.call(op, body);
      answers.push(r.ok ? r.reply : { code: r.rejection.code, details: r.rejection.details });
      await housekeeping();
      return r;
    };
    await step("register", { proxy: "a", maxLeases: 2 });
    await step("register", { proxy: "b", maxLeases: 1, latencyMs: 5 });
    const l1 = ok<AcquireReply>(await step("acquire", { ttlMs: 10 * S, target: "t" }));
    const l2 = ok<AcquireReply>(await step("acquire", { ttlMs: 20 * S }));
    await step("report", { leaseId: l1.lease.id, result: "rate_limited" });
    await step("acquire", { ttlMs: 10 * S, target: "t" });
    h.clock.advance(10 * S);
    await step("list", {});
    await step("report", { leaseId: l1.lease.id, result: "ok" });
    h.clock.advance(COOLDOWN_MS);
    await step("report", { leaseId: l1.lease.id, result: "banned" });
    await step("counts", {});
    h.clock.advance(1);
    await step("report", { leaseId: l1.lease.id, result: "ok" });
    await step("release", { leaseId: l2.lease.id });
    await step("list", {});
    h.clock.advance(COOLDOWN_MS);
    await step("list", {});
    await step("acquire", { ttlMs: 10 * S, target: "t" });
    await step("report", { leaseId: l2.lease.id, result: "ok" });
    return answers;
  }

  it("answers the same with no sweep, a sweep after every step, and a restart after every step", async () => {
    const plain = await service();
    const swept = await service();
    const restarted = await service();
    const expected = await script(plain, () => Promise.resolve());
    expect(await script(swept, () => swept.sweep())).toEqual(expected);
    expect(await script(restarted, () => restarted.restart())).toEqual(expected);
  });

  it("the sweep drops leases past retention and cooldowns ended cooldownMs ago from the actors, the projection and the index", async () => {
    const h = await service();
    await register(h, "a");
    const lease = await acquire(h, { ttlMs: 10 * S });
    ok(await h.call("report", { leaseId: lease.lease.id, result: "banned" }));
    const actorState = () => {
      const s = h.runtime.peek<{ leases: Map<string, unknown>; cooldowns: Map<string, unknown> }>("proxy", "a")!;
      return { leases: s.leases.size, cooldowns: s.cooldowns.size };
    };
    const projected = () => {
      const s = h.module.model.stateOf("a");
      return { leases: s.leases.size, cooldowns: s.cooldowns.size };
    };
    h.clock.advance(10 * S + COOLDOWN_MS);
    await h.sweep();
    // Cooldown over (kept for its streak), lease still within retention (inclusive).
    expect(actorState()).toEqual({ leases: 1, cooldowns: 1 });
    expect(projected()).toEqual({ leases: 1, cooldowns: 1 });
    expect(h.module.model.indexSizes.leases).toBe(1);
    h.clock.advance(1);
    await h.sweep();
    expect(actorState()).toEqual({ leases: 0, cooldowns: 1 });
    h.clock.advance(COOLDOWN_MS);
    await h.sweep();
    expect(actorState()).toEqual({ leases: 0, cooldowns: 0 });
    expect(projected()).toEqual({ leases: 0, cooldowns: 0 });
    expect(h.module.model.indexSizes).toEqual({ leases: 0, unfolded: 0, acquisitions: 0 });
    rejected(await h.call("report", { leaseId: lease.lease.id, result: "ok" }), "UNKNOWN_LEASE");
  });

  it("a restart keeps leases, counts and cooldowns", async () => {
    const h = await service();
    await register(h, "a", { maxLeases: 2 });
    await register(h, "b", { maxLeases: 2, latencyMs: 5 });
    const l1 = await acquire(h, { target: "t" });
    await acquire(h);
    ok(await h.call("report", { leaseId: l1.lease.id, result: "rate_limited" }));
    const list = ok(await h.call("list", {}));
    const counts = ok(await h.call("counts", {}));
    await h.restart();
    expect(ok(await h.call("list", {}))).toEqual(list);
    expect(ok(await h.call("counts", {}))).toEqual(counts);
    // The cooldown for t still steers the next acquisition for t away from a.
    const next = await acquire(h, { target: "t" });
    expect(next.lease.proxy).toBe("b");
    expect(next.stats).toEqual(stats(2, 0, 1, 0));
    ok(await h.call("release", { leaseId: l1.lease.id }));
    rejected(await h.call("report", { leaseId: l1.lease.id, result: "ok" }), "UNKNOWN_LEASE");
  });
});

describe("one event per command", () => {
  it("records exactly one event for each change and none for reads, refusals and no-ops", async () => {
    const h = await service();
    const count = () => h.events().length;
    const expectEvents = async (op: string, body: unknown, n: number) => {
      const before = count();
      await h.call(op, body);
      expect(count() - before, `${op} ${JSON.stringify(body)}`).toBe(n);
    };
    await expectEvents("register", { proxy: "a", maxLeases: 1 }, 1);
    await expectEvents("register", { proxy: "a", maxLeases: 1 }, 0);
    await expectEvents("acquire", { ttlMs: S }, 1);
    await expectEvents("acquire", { ttlMs: S }, 0); // NO_MATCH
    await expectEvents("acquire", { ttlMs: S, candidates: ["zz"] }, 0); // UNKNOWN_PROXY
    const leaseId = (h.events().at(-1)!.event.data as { leaseId: string }).leaseId;
    await expectEvents("report", { leaseId, result: "ok" }, 0);
    await expectEvents("report", { leaseId, result: "rate_limited" }, 1);
    await expectEvents("list", {}, 0);
    await expectEvents("counts", {}, 0);
    await expectEvents("release", { leaseId }, 1);
    await expectEvents("release", { leaseId }, 0);
    await expectEvents("release", { leaseId: "nope" }, 0);
    await expectEvents("report", { leaseId, result: "banned" }, 0); // UNKNOWN_LEASE
    await expectEvents("remove", { proxy: "a" }, 1);
    await expectEvents("remove", { proxy: "a" }, 0);
    await expectEvents("register", { proxy: "a", maxLeases: 1 }, 1);
  });
});
