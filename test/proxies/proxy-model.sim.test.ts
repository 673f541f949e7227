/**
 * Model-based test of the proxy contract: random sequences of register,
 * remove, acquire (and repeats of an acquire's requestId), release, report,
 * list, counts, clock advances, sweeps and restarts, run against the real
 * proxy module (actor runtime, command turns, deciders, leasing, read model) on
 * a MemoryEventLog and a ManualClock, and against a direct port of the seed's
 * store (test/support/proxy-reference-model.ts). Every answer must agree.
 *
 * The model sweeps before every operation and the service only when told
 * (at random), so agreement also shows that no answer depends on when the
 * sweep runs; restarts rebuild everything from the log, so it also shows that
 * leases, cooldowns and requestIds survive a restart.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { TurnResult } from "../../src/actors/actor-runtime.ts";
import { startProxyHarness, type ProxyHarness } from "../support/proxy-harness.ts";
import { RefProxyService, type RefAcquire, type RefAnswer } from "../support/proxy-reference-model.ts";

const COOLDOWN_MS = 10_000;
const DEDUP_WINDOW_MS = 3_000;
/** "\uFFFD" and "😀" order differently by UTF-16 code units (the contract) and by UTF-8 bytes (the seed's Go). */
const NAMES = ["a", "b", "c", "\uFFFD", "😀"] as const;
const TARGETS = ["", "t1", "t2"] as const;
const LABEL_SETS = [{}, { region: "eu" }, { region: "us" }, { region: "eu", tier: "1" }] as const;
const RESULTS = ["ok", "rate_limited", "banned"] as const;

interface Model {
  readonly ref: RefProxyService;
  /** Leases granted so far: the model's id and the service's id of the same lease. */
  readonly leases: { modelId: string; realId: string }[];
  /** Acquisitions sent with a requestId, to be sent again. */
  readonly withRequestId: RefAcquire[];
  requestIds: number;
}

interface Real {
  readonly h: ProxyHarness;
}

type Cmd = fc.AsyncCommand<Model, Real>;

/** The service's answer in the model's terms. */
function answerOf(result: TurnResult): RefAnswer {
  if (result.ok) return { ok: true, reply: result.reply };
  const { code, details } = result.rejection;
  return details === undefined ? { ok: false, code } : { ok: false, code, details: { ...details } };
}

function expectSame(real: RefAnswer, model: RefAnswer, what: string): void {
  expect(real, what).toEqual(model);
}

class Register implements Cmd {
  constructor(
    readonly name: string,
    readonly maxLeases: number,
    readonly latencyMs: number,
    readonly labels: Record<string, string>,
    readonly healthy: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const body = { proxy: this.name, maxLeases: this.maxLeases, latencyMs: this.latencyMs, labels: this.labels, healthy: this.healthy };
    const real = answerOf(await r.h.call("register", body));
    expectSame(
      real,
      m.ref.register(this.name, { maxLeases: this.maxLeases, latencyMs: this.latencyMs, labels: this.labels, healthy: this.healthy }),
      this.toString(),
    );
  }
  toString = () =>
    `register(${JSON.stringify(this.name)}, max ${this.maxLeases}, latency ${this.latencyMs}, ${JSON.stringify(this.labels)}, ${this.healthy ? "healthy" : "unhealthy"})`;
}

class Remove implements Cmd {
  constructor(readonly name: string) {}
  check = () => true;
  async run(m: Model, r: Real) {
    expectSame(answerOf(await r.h.call("remove", { proxy: this.name })), m.ref.remove(this.name), this.toString());
  }
  toString = () => `remove(${JSON.stringify(this.name)})`;
}

/** Compares an acquisition's answers, matching the model's lease id with the service's. */
function compareAcquire(m: Model, realResult: TurnResult, model: RefAnswer, what: string): void {
  const real = answerOf(realResult);
  if (!model.ok || !real.ok) {
    expectSame(real, model, what);
    return;
  }
  const modelReply = model.reply as { lease: { id: string } };
  const realReply = real.reply as { lease: { id: string } };
  expect({ ...realReply, lease: { ...realReply.lease, id: "?" } }, what).toEqual({
    ...modelReply,
    lease: { ...modelReply.lease, id: "?" },
  });
  const known = m.leases.find((l) => l.modelId === modelReply.lease.id);
  if (known === undefined) {
    expect(
      m.leases.some((l) => l.realId === realReply.lease.id),
      `${what}: lease id reused`,
    ).toBe(false);
    m.leases.push({ modelId: modelReply.lease.id, realId: realReply.lease.id });
  } else {
    expect(realReply.lease.id, `${what}: a repeat must return the same lease`).toBe(known.realId);
  }
}

class Acquire implements Cmd {
  constructor(
    readonly ttlMs: number,
    readonly target: string,
    readonly candidates: string[] | undefined,
    readonly labels: Record<string, string>,
    readonly withRequestId: boolean,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const requestId = this.withRequestId ? `req-${++m.requestIds}` : undefined;
    const request: RefAcquire = { ttlMs: this.ttlMs, target: this.target, candidates: this.candidates, labels: this.labels, requestId };
    if (requestId !== undefined) m.withRequestId.push(request);
    const realResult = await r.h.call("acquire", request);
    compareAcquire(m, realResult, m.ref.acquire(request), `${this.toString()} as ${requestId ?? "no requestId"}`);
  }
  toString = () =>
    `acquire(ttl ${this.ttlMs}, target ${JSON.stringify(this.target)}, candidates ${JSON.stringify(this.candidates)}, labels ${JSON.stringify(this.labels)}${this.withRequestId ? ", requestId" : ""})`;
}

class AcquireAgain implements Cmd {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.withRequestId.length > 0;
  async run(m: Model, r: Real) {
    const request = m.withRequestId[this.pick % m.withRequestId.length]!;
    const realResult = await r.h.call("acquire", request);
    compareAcquire(m, realResult, m.ref.acquire(request), `${this.toString()} = ${JSON.stringify(request)}`);
  }
  toString = () => `acquireAgain(#${this.pick})`;
}

/** A lease the test knows (by position), or an id nobody was given. */
type LeaseRef = number | "unknown";

function leaseIds(m: Model, ref: LeaseRef): { modelId: string; realId: string } {
  if (ref === "unknown" || m.leases.length === 0) return { modelId: "no-such-lease", realId: "no-such-lease" };
  return m.leases[ref % m.leases.length]!;
}

class Release implements Cmd {
  constructor(readonly ref: LeaseRef) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const ids = leaseIds(m, this.ref);
    expectSame(answerOf(await r.h.call("release", { leaseId: ids.realId })), m.ref.release(ids.modelId), this.toString());
  }
  toString = () => `release(${this.ref})`;
}

class Report implements Cmd {
  constructor(
    readonly ref: LeaseRef,
    readonly result: (typeof RESULTS)[number],
    readonly target: string | undefined,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const ids = leaseIds(m, this.ref);
    const body =
      this.target === undefined
        ? { leaseId: ids.realId, result: this.result }
        : { leaseId: ids.realId, result: this.result, target: this.target };
    const real = answerOf(await r.h.call("report", body));
    expectSame(real, m.ref.report(ids.modelId, this.result, this.target ?? ""), this.toString());
  }
  toString = () => `report(${this.ref}, ${this.result}, target ${JSON.stringify(this.target)})`;
}

class List implements Cmd {
  check = () => true;
  async run(m: Model, r: Real) {
    expectSame(answerOf(await r.h.call("list", {})), m.ref.list(), "list");
  }
  toString = () => "list";
}

class Counts implements Cmd {
  check = () => true;
  async run(m: Model, r: Real) {
    expectSame(answerOf(await r.h.call("counts", {})), m.ref.counts(), "counts");
  }
  toString = () => "counts";
}

class Advance implements Cmd {
  constructor(readonly ms: number) {}
  check = () => true;
  run(_m: Model, r: Real) {
    r.h.clock.advance(this.ms);
    return Promise.resolve();
  }
  toString = () => `advance(${this.ms})`;
}

class Sweep implements Cmd {
  check = () => true;
  run(_m: Model, r: Real) {
    return r.h.sweep();
  }
  toString = () => "sweep";
}

class Restart implements Cmd {
  check = () => true;
  run(_m: Model, r: Real) {
    return r.h.restart();
  }
  toString = () => "restart";
}

const name = fc.constantFrom(...NAMES);
const labels: fc.Arbitrary<Record<string, string>> = fc.constantFrom(...LABEL_SETS).map((l) => ({ ...l }));
const leaseRef: fc.Arbitrary<LeaseRef> = fc.oneof(
  { weight: 9, arbitrary: fc.nat(50) },
  { weight: 1, arbitrary: fc.constant("unknown" as const) },
);
/** Steps that land on and around every boundary: TTLs, the cooldown (= retention) and the dedup window. */
const step = fc.oneof(
  fc.constantFrom(1, 99, 100, 101, 999, 1000, DEDUP_WINDOW_MS - 1, DEDUP_WINDOW_MS, COOLDOWN_MS - 1, COOLDOWN_MS, COOLDOWN_MS + 1),
  fc.integer({ min: 0, max: 4000 }),
);

const register = fc
  .record({
    name,
    maxLeases: fc.oneof({ weight: 1, arbitrary: fc.constant(0) }, { weight: 5, arbitrary: fc.integer({ min: 1, max: 3 }) }),
    latencyMs: fc.integer({ min: 0, max: 2 }),
    labels,
    healthy: fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  })
  .map((c) => new Register(c.name, c.maxLeases, c.latencyMs, c.labels, c.healthy));
const candidates = fc.oneof(
  { weight: 3, arbitrary: fc.constant(undefined) },
  { weight: 2, arbitrary: fc.array(name, { minLength: 1, maxLength: 3 }) },
  { weight: 1, arbitrary: fc.array(fc.oneof(name, fc.constant("ghost")), { maxLength: 3 }) },
);
const acquire = fc
  .record({
    ttlMs: fc.constantFrom(1, 100, 1000, 5000),
    target: fc.constantFrom(...TARGETS),
    candidates,
    labels: fc.oneof({ weight: 3, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: labels }),
    withRequestId: fc.boolean(),
  })
  .map((c) => new Acquire(c.ttlMs, c.target, c.candidates, c.labels, c.withRequestId));
const report = fc
  .record({ ref: leaseRef, result: fc.constantFrom(...RESULTS), target: fc.option(fc.constantFrom(...TARGETS), { nil: undefined }) })
  .map((c) => new Report(c.ref, c.result, c.target));

/** Each command with a weight (fc.commands picks uniformly among the arbitraries it is given). */
const weighted: [number, fc.Arbitrary<Cmd>][] = [
  [3, register],
  [1, name.map((n) => new Remove(n))],
  [6, acquire],
  [1, fc.nat(20).map((i) => new AcquireAgain(i))],
  [2, leaseRef.map((l) => new Release(l))],
  [3, report],
  [1, fc.constant(new List())],
  [1, fc.constant(new Counts())],
  [3, step.map((ms) => new Advance(ms))],
  [1, fc.constant(new Sweep())],
  [1, fc.constant(new Restart())],
];
const commands = weighted.flatMap(([weight, arbitrary]) => Array.from({ length: weight }, () => arbitrary));

describe("proxy service against the seed's store", () => {
  it("answers every random sequence as the reference model does", async () => {
    await fc.assert(
      // A few registrations first, so that most sequences spend their steps on leases rather than on UNKNOWN_PROXY.
      fc.asyncProperty(
        fc.array(register, { minLength: 1, maxLength: 4 }),
        fc.commands(commands, { maxCommands: 60, size: "max" }),
        async (setup, cmds) => {
          const h = await startProxyHarness({ cooldownMs: COOLDOWN_MS, dedupWindowMs: DEDUP_WINDOW_MS });
          let modelIds = 0;
          const model: Model = {
            ref: new RefProxyService(
              COOLDOWN_MS,
              () => h.clock.now(),
              () => `model-${++modelIds}`,
              DEDUP_WINDOW_MS,
            ),
            leases: [],
            withRequestId: [],
            requestIds: 0,
          };
          try {
            for (const c of setup) await c.run(model, { h });
            await fc.asyncModelRun(() => ({ model, real: { h } }), cmds);
          } finally {
            await h.stop();
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
