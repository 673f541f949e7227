/**
 * Model-based simulation: random sequences of host changes, acquires (with
 * and without requestId, and repeats of one), moves, candidates, pins,
 * unpins, releases, clock advances, sweeps and restarts, with host
 * capacity caps set and lifted, run against the
 * real route module (endpoints, tables, ActorRuntime, MemoryEventLog,
 * ManualClock) and against the reference model ported from the seed. Every
 * answer, every placement's reason and origin, the snapshot, the pins and
 * host.list must agree after every step.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { TurnResult } from "../../src/actors/actor-runtime.ts";
import type { RecordedEvent } from "../../src/events/envelope.ts";
import { RouteReferenceModel, type ModelAcquire, type ModelKey } from "../support/route-reference-model.ts";
import { startRouteHarness, type RouteHarness } from "../support/route-harness.ts";

const IDLE_MS = 10_000;
const DEDUP_WINDOW_MS = 20_000;
const HOSTS = ["h1", "h2", "h3", "H0"];
const ROUTES = ["r1", "r2"];

interface Model {
  readonly table: RouteReferenceModel;
  now: number;
  /** The last acquire sent with a requestId, and what it was answered (repeats are compared with it). */
  last: { key: ModelKey; candidates: string[]; requestId: string; outcome: ModelAcquire; at: number } | undefined;
  requestIds: number;
}

interface Real {
  readonly h: RouteHarness;
}

type Cmd = fc.AsyncCommand<Model, Real>;

const wireOf = (o: ModelAcquire) =>
  "error" in o ? { code: o.error, ...(o.full === undefined ? {} : { full: o.full }) } : { reply: { host: o.host, reused: o.reused } };
const wireOfResult = (r: TurnResult) => {
  if (r.ok) return { reply: r.reply };
  const full = r.rejection.details?.["full"];
  return { code: r.rejection.code, ...(full === undefined ? {} : { full }) };
};

/**
 * Runs `op` on the real module and checks it appended at most one event of
 * the actor it addressed; returns those events. A placement on a capped host
 * also appends its host's admission, checked here: exactly one, and only then.
 */
async function atMostOneEvent(h: RouteHarness, op: () => Promise<TurnResult>): Promise<{ result: TurnResult; appended: RecordedEvent[] }> {
  const before = h.events().length;
  const result = await op();
  const all = h.events().slice(before);
  const admissions = all.filter((e) => e.event.type === "HostLeaseAdmitted");
  const appended = all.filter((e) => e.event.type !== "HostLeaseAdmitted");
  expect(appended.length, JSON.stringify(appended.map((e) => e.event))).toBeLessThanOrEqual(1);
  const admitted = appended.filter(
    (e) => e.event.type === "RouteLeasePlaced" && (e.event.data as { admission?: number }).admission !== undefined,
  );
  expect(admissions.length).toBe(admitted.length);
  for (const [i, a] of admissions.entries()) {
    expect((admitted[i]!.event.data as { admission: number }).admission).toBe(a.seq);
    expect(a.event.id).toBe((admitted[i]!.event.data as { host: string }).host);
  }
  return { result, appended };
}

/** Compares the whole observable state: snapshot, pins, host list. */
async function compare(m: Model, r: Real): Promise<void> {
  const snap = (await r.h.call("route.snapshot", {})) as { ok: true; reply: unknown };
  expect(snap.ok).toBe(true);
  expect(snap.reply).toEqual({
    leases: m.table.snapshot().map((l) => ({
      route: l.route,
      fp: l.fp,
      model: l.model,
      host: l.host,
      createdAt: new Date(l.created).toISOString(),
      lastUsedAt: new Date(l.lastUsed).toISOString(),
    })),
  });
  for (const route of ROUTES) {
    const got = await r.h.call("route.get", { route });
    expect(got.ok && (got.reply as { pinned: string }).pinned).toBe(m.table.pinned(route));
  }
  const hosts = await r.h.call("host.list", {});
  expect(hosts.ok && hosts.reply).toEqual({ hosts: m.table.hostList() });
}

class SetHost implements Cmd {
  constructor(
    readonly host: string,
    readonly healthy: boolean,
    readonly draining: boolean,
    readonly maxLeases: number | null = null,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.table.setHost(this.host, this.healthy, this.draining, this.maxLeases);
    const cap = this.maxLeases === null ? {} : { maxLeases: this.maxLeases };
    const result = await r.h.call("host.set", { host: this.host, healthy: this.healthy, draining: this.draining, ...cap });
    expect(wireOfResult(result)).toEqual({ reply: { host: this.host } });
    await compare(m, r);
  }
  toString = () => `host.set(${this.host}, healthy=${this.healthy}, draining=${this.draining}, maxLeases=${this.maxLeases})`;
}

class Acquire implements Cmd {
  constructor(
    readonly key: ModelKey,
    readonly candidates: string[],
    readonly withRequestId: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const requestId = this.withRequestId ? `req-${++m.requestIds}` : undefined;
    const expected = m.table.acquire(this.key, this.candidates, m.now, this.withRequestId);
    if (requestId !== undefined) m.last = { key: this.key, candidates: this.candidates, requestId, outcome: expected, at: m.now };
    const { result, appended } = await atMostOneEvent(r.h, () =>
      r.h.call("route.acquire", { ...this.key, candidates: this.candidates, ...(requestId === undefined ? {} : { requestId }) }),
    );
    expect(wireOfResult(result)).toEqual(wireOf(expected));
    checkPlacement(expected, appended, this.key);
    if (requestId !== undefined) for (const e of appended) expect(e.event.requestId).toBe(requestId);
    await compare(m, r);
  }
  toString = () => `acquire(${JSON.stringify(this.key)}, [${this.candidates.join(",")}]${this.withRequestId ? ", requestId" : ""})`;
}

/** A placement appends RouteLeasePlaced with the seed's reason and origin; a reuse or refusal never does. */
function checkPlacement(expected: ModelAcquire, appended: RecordedEvent[], key: ModelKey): void {
  const placedEvents = appended.filter((e) => e.event.type === "RouteLeasePlaced");
  if ("error" in expected || expected.placed === undefined) {
    expect(placedEvents).toEqual([]);
    return;
  }
  expect(placedEvents).toHaveLength(1);
  expect(placedEvents[0]!.event.id).toBe(key.route);
  expect(placedEvents[0]!.event.data).toMatchObject({
    fp: key.fp,
    model: key.model,
    host: expected.host,
    from: expected.placed.from,
    reason: expected.placed.reason,
    reused: expected.reused,
  });
}

class RepeatLast implements Cmd {
  check = (m: Readonly<Model>) => m.last !== undefined;
  async run(m: Model, r: Real): Promise<void> {
    const last = m.last!;
    let expected: ModelAcquire;
    if (!("error" in last.outcome) && m.now - last.at <= DEDUP_WINDOW_MS) {
      // A success repeated within the window: the same answer, nothing changes.
      expected = last.outcome;
    } else {
      // A failure, or a success past the window, is decided again.
      expected = m.table.acquire(last.key, last.candidates, m.now, true);
      m.last = { ...last, outcome: expected, at: m.now };
    }
    const { result, appended } = await atMostOneEvent(r.h, () =>
      r.h.call("route.acquire", { ...last.key, candidates: last.candidates, requestId: last.requestId }),
    );
    const same = expected === last.outcome;
    expect(wireOfResult(result)).toEqual(wireOf(expected));
    if (same) expect(appended).toEqual([]);
    else checkPlacement(expected, appended, last.key);
    await compare(m, r);
  }
  toString = () => "repeat the last acquire with its requestId";
}

class Move implements Cmd {
  constructor(
    readonly key: ModelKey,
    readonly host: string,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const expected = m.table.move(this.key, this.host, m.now);
    const { result, appended } = await atMostOneEvent(r.h, () => r.h.call("route.move", { ...this.key, host: this.host }));
    expect(wireOfResult(result)).toEqual({ reply: expected });
    expect(appended.map((e) => e.event.data)).toEqual([expect.objectContaining({ reason: "ctx", from: expected.from, host: this.host })]);
    await compare(m, r);
  }
  toString = () => `move(${JSON.stringify(this.key)} → ${this.host})`;
}

class Candidates implements Cmd {
  constructor(
    readonly route: string,
    readonly hosts: string[],
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.table.candidates(this.route, this.hosts);
    const { result } = await atMostOneEvent(r.h, () => r.h.call("route.candidates", { route: this.route, hosts: this.hosts }));
    expect(wireOfResult(result)).toEqual({ reply: {} });
    await compare(m, r);
  }
  toString = () => `candidates(${this.route}, [${this.hosts.join(",")}])`;
}

class Pin implements Cmd {
  constructor(
    readonly route: string,
    readonly host: string,
  ) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const refused = m.table.pin(this.route, this.host);
    const { result } = await atMostOneEvent(r.h, () => r.h.call("route.pin", { route: this.route, host: this.host }));
    expect(wireOfResult(result)).toEqual(refused === undefined ? { reply: {} } : { code: refused });
    await compare(m, r);
  }
  toString = () => `pin(${this.route}, ${this.host})`;
}

class Unpin implements Cmd {
  constructor(readonly route: string) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const wasPinned = m.table.pinned(this.route) !== "";
    m.table.unpin(this.route);
    const { result, appended } = await atMostOneEvent(r.h, () => r.h.call("route.unpin", { route: this.route }));
    expect(wireOfResult(result)).toEqual({ reply: {} });
    expect(appended.length).toBe(wasPinned ? 1 : 0);
    await compare(m, r);
  }
  toString = () => `unpin(${this.route})`;
}

class Release implements Cmd {
  constructor(readonly route: string) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const released = m.table.release(this.route);
    const { result, appended } = await atMostOneEvent(r.h, () => r.h.call("route.release", { route: this.route }));
    expect(wireOfResult(result)).toEqual({ reply: { released } });
    expect(appended.length).toBe(released > 0 ? 1 : 0);
    await compare(m, r);
  }
  toString = () => `release(${this.route})`;
}

class Advance implements Cmd {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += this.ms;
    r.h.clock.advance(this.ms);
    await compare(m, r);
  }
  toString = () => `advance(${this.ms})`;
}

class Sweep implements Cmd {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    const before = r.h.events().length;
    const expired = m.table.expireIdle(m.now);
    await r.h.sweep();
    const appended = r.h.events().slice(before);
    expect(appended.length).toBe(expired);
    for (const e of appended) expect(e.event.type).toBe("RouteLeaseExpired");
    await compare(m, r);
  }
  toString = () => "sweep";
}

class Restart implements Cmd {
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    await r.h.restart();
    await compare(m, r);
  }
  toString = () => "restart";
}

const host = fc.constantFrom(...HOSTS, "never-set");
const key = fc.record({ route: fc.constantFrom(...ROUTES), fp: fc.constantFrom("", "c1", "c2"), model: fc.constantFrom("m", "n") });
const candidates = fc.uniqueArray(host, { maxLength: 4 });
// Mostly healthy hosts, sometimes draining, so that sequences place, reuse, inherit and replace.
// Caps mostly absent, else small, so that hosts fill up, a lowered cap leaves one over it, and a cap is lifted again.
const setHost = fc
  .tuple(
    fc.constantFrom(...HOSTS),
    fc.constantFrom(true, true, true, false),
    fc.constantFrom(false, false, false, true),
    fc.constantFrom(null, null, 0, 1, 2, 3),
  )
  .map(([h, healthy, draining, maxLeases]) => new SetHost(h, healthy, draining, maxLeases));
const acquire = fc.tuple(key, candidates, fc.boolean()).map(([k, c, withId]) => new Acquire(k, c, withId));
/** Repeated entries weigh an arbitrary: fc.commands picks among them uniformly. */
const commands: fc.Arbitrary<Cmd>[] = [
  setHost,
  setHost,
  acquire,
  acquire,
  acquire,
  acquire,
  acquire,
  fc.constant(new RepeatLast()),
  fc.tuple(key, host).map(([k, h]) => new Move(k, h)),
  fc.tuple(fc.constantFrom(...ROUTES), fc.array(host, { maxLength: 3 })).map(([route, hs]) => new Candidates(route, hs)),
  fc.tuple(fc.constantFrom(...ROUTES), host).map(([route, h]) => new Pin(route, h)),
  fc.constantFrom(...ROUTES).map((route) => new Unpin(route)),
  fc.constantFrom(...ROUTES).map((route) => new Release(route)),
  fc.constantFrom(0, 1, 99, 100, 101, 5_000, 9_999, 10_000, 10_001, 25_000).map((ms) => new Advance(ms)),
  fc.constantFrom(0, 1, 99, 100, 101, 5_000, 9_999, 10_000, 10_001, 25_000).map((ms) => new Advance(ms)),
  fc.constant(new Sweep()),
  fc.constant(new Restart()),
];

describe.each(["least-loaded", "rendezvous", "bounded-hash"] as const)("route placement with the %s chooser", (chooser) => {
  it("matches the reference model ported from the seed, step by step", async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 50, size: "max" }), async (cmds) => {
        const h = await startRouteHarness({ routeIdleMs: IDLE_MS, routeChooser: chooser, dedupWindowMs: DEDUP_WINDOW_MS });
        try {
          const model: Model = {
            table: new RouteReferenceModel({ idleMs: IDLE_MS, chooser, touchEveryMs: IDLE_MS / 100 }),
            now: h.clock.now(),
            last: undefined,
            requestIds: 0,
          };
          // Two healthy hosts to start from; the sequence changes them as it likes.
          for (const start of [new SetHost("h1", true, false), new SetHost("h2", true, false)]) await start.run(model, { h });
          await fc.asyncModelRun(() => ({ model, real: { h } }), cmds);
        } finally {
          await h.stop();
        }
      }),
      { numRuns: 100 },
    );
  });
});
