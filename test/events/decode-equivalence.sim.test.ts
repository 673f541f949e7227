/**
 * Decoding through the compiled schemas (src/events/compiled-schemas.ts) is
 * exactly as strict as the zod schemas: on valid events of every type and on
 * random mutations of them (a field removed, replaced by a value of another
 * type or out of range, an extra key, `__proto__` and `constructor` keys,
 * another type name), `decodeEvent` returns what the zod-only decoding
 * returns, to the key order and the rejection's reason; and each compiled
 * predicate says yes only where its zod schema does.
 */
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import { compileSchema } from "../../src/events/compiled-schemas.ts";
import { encodeEvent, type EventEnvelope } from "../../src/events/envelope.ts";
import { decodeParsed } from "../../src/events/decode.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import { hostEventSchemas } from "../../src/host/events.ts";
import { lockEventSchemas } from "../../src/lock/events.ts";
import { proxyEventSchemas } from "../../src/proxy/events.ts";
import { routeEventSchemas } from "../../src/route/events.ts";
import { simulateWorkload } from "../tools/support/workload.ts";

const DATA_SCHEMAS: Readonly<Record<string, z.ZodType>> = {
  ...lockEventSchemas,
  ...proxyEventSchemas,
  ...hostEventSchemas,
  ...routeEventSchemas,
};

const at = "2026-03-01T00:00:01.961Z";
const env = (type: string, kind: EventEnvelope["kind"], id: string, data: Record<string, unknown>, requestId?: string) => ({
  type,
  v: 1,
  at,
  kind,
  id,
  ...(requestId === undefined ? {} : { requestId }),
  data,
});

/** Every event type, with its optional fields both absent and present. */
const HAND_WRITTEN: readonly unknown[] = [
  env("LockAcquired", "lock", "a", { owner: "w", generation: 1, ttlMs: 5, expiresAt: at, previousOwner: "" }),
  env("LockAcquired", "lock", "a", { owner: "w", generation: 2, ttlMs: 5, expiresAt: at, previousOwner: "x", waiterSeq: 7 }, "r-1"),
  env("LockRenewed", "lock", "a", { owner: "w", generation: 2, ttlMs: 5, expiresAt: at }),
  env("LockReleased", "lock", "a", { owner: "w", generation: 2 }),
  env("LockReset", "lock", "a", { generation: 0 }),
  env("LockWaiterQueued", "lock", "a", { owner: "w", until: at, claimWindowMs: 100 }),
  env("ProxyRegistered", "proxy", "p", { maxLeases: 0, latencyMs: 3, labels: {}, healthy: false }),
  env("ProxyRegistered", "proxy", "p", { maxLeases: 2, latencyMs: 3, labels: { region: "eu", "1": "x" }, healthy: true }),
  env("ProxyRemoved", "proxy", "p", {}),
  env("ProxyLeaseGranted", "proxy", "p", { leaseId: "l", target: "", ttlMs: 9, expiresAt: at }),
  env("ProxyLeaseGranted", "proxy", "p", {
    leaseId: "l",
    target: "t",
    ttlMs: 9,
    expiresAt: at,
    stats: { considered: 3, unhealthy: 0, inCooldown: 1, atCapacity: 0 },
  }),
  env("ProxyLeaseReleased", "proxy", "p", { leaseId: "l" }),
  env("ProxyCooldownStarted", "proxy", "p", { leaseId: "l", result: "banned", target: "", untilAt: at }),
  env("ProxyCooldownStarted", "proxy", "p", { leaseId: "l", result: "rate_limited", target: "t", untilAt: at, cooldownMs: 5, streak: 2 }),
  env("HostStateSet", "host", "h", { healthy: true, draining: false }),
  env("HostStateSet", "host", "h", { healthy: true, draining: true, maxLeases: null }),
  env("HostStateSet", "host", "h", { healthy: false, draining: false, maxLeases: 0 }),
  env("HostLeaseAdmitted", "host", "h", { route: "r", fp: "", model: "m", routeSeq: 0, closed: [] }),
  env("HostLeaseAdmitted", "host", "h", { route: "r", fp: "a", model: "m", routeSeq: 4, closed: [1, 2] }),
  env("RouteLeasePlaced", "route", "r", { fp: "a", model: "m", host: "h", from: "", reason: "new", reused: false }),
  env("RouteLeasePlaced", "route", "r", {
    fp: "a",
    model: "m",
    host: "h",
    from: "g",
    reason: "ctx",
    reused: true,
    seen: ["h"],
    admission: 3,
  }),
  env("RouteLeaseTouched", "route", "r", { fp: "a", model: "m" }),
  env("RouteLeaseExpired", "route", "r", { fp: "a", model: "m", host: "h", seen: [] }),
  env("RouteCandidatesSeen", "route", "r", { seen: ["h", "g"] }),
  env("RoutePinned", "route", "r", { host: "h", displaced: [{ fp: "a", model: "m", host: "g" }] }),
  env("RouteUnpinned", "route", "r", {}),
  env("RouteReleased", "route", "r", { released: [], seen: ["h"] }),
  env("RouteAdmissionLapsed", "route", "r", { host: "h", admission: 9 }),
];

/** Values of every JSON type that schemas tend to draw lines between. */
const EDGE_VALUES: readonly unknown[] = JSON.parse(
  JSON.stringify([
    "",
    "x",
    "h",
    "Z",
    "x".repeat(128),
    "x".repeat(129),
    at,
    "2026-03-01T00:00:01Z",
    "2026-13-01T00:00:00.000Z",
    "2026-02-30T00:00:00.000Z",
    "2026-03-01T00:00:00.000+01:00",
    "2026-03-01T00:00:00.000z",
    "banned",
    "new",
    "lock",
    0,
    1,
    -1,
    1.5,
    2 ** 53 - 1,
    2 ** 53,
    -(2 ** 53),
    1e300,
    true,
    false,
    null,
    [],
    {},
    [""],
    ["h"],
    [0],
    [1, 2],
    { fp: "a", model: "m", host: "h" },
    { considered: 0, unhealthy: 0, inCooldown: 0, atCapacity: 0 },
    { region: "eu" },
    { region: 1 },
  ]),
) as unknown[];
/** Objects with keys JSON.parse makes own properties of but zod treats apart. */
const ODD_OBJECTS: readonly string[] = [
  '{"__proto__":{"a":1}}',
  '{"__proto__":"x","a":"b"}',
  '{"constructor":"x"}',
  '{"constructor":{"prototype":1}}',
];
const TYPES = [...Object.keys(DATA_SCHEMAS), "Unknown", "", "toString", "constructor", "__proto__", "hasOwnProperty"];

/** A JSON value for a mutation: an edge value, an odd object or any JSON. */
const valueArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...EDGE_VALUES) },
  { weight: 2, arbitrary: fc.constantFrom(...ODD_OBJECTS).map((text) => JSON.parse(text) as unknown) },
  { weight: 2, arbitrary: fc.jsonValue() },
  { weight: 1, arbitrary: fc.constantFrom(...TYPES) },
);
const keyArb = fc.oneof(
  fc.constantFrom("type", "v", "at", "kind", "id", "requestId", "data", "__proto__", "constructor", "extra", "seen", "stats", "waiterSeq"),
  fc.string({ maxLength: 6 }),
);

/** Every container (object or array) within a value, the value itself first. */
function containers(value: unknown, out: (Record<string, unknown> | unknown[])[] = []): (Record<string, unknown> | unknown[])[] {
  if (typeof value !== "object" || value === null) return out;
  out.push(value as Record<string, unknown>);
  for (const child of Object.values(value)) containers(child, out);
  return out;
}

/** Sets an own property even when the key is `__proto__`, as JSON.parse would. */
function setOwn(target: Record<string, unknown> | unknown[], key: string | number, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

type Mutation = {
  readonly where: number;
  readonly op: "delete" | "set" | "add";
  readonly key: string;
  readonly pick: number;
  readonly value: unknown;
};
const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  where: fc.nat(),
  op: fc.constantFrom("delete", "set", "add"),
  key: keyArb,
  pick: fc.nat(),
  value: valueArb,
});

/** Applies mutations to a deep copy of `event` (made with JSON, so odd keys stay own data properties). */
function mutate(event: unknown, mutations: readonly Mutation[]): string {
  const copy = JSON.parse(JSON.stringify(event)) as unknown;
  let root: unknown = copy;
  for (const m of mutations) {
    // A fresh copy each time: a value the arbitrary hands out twice must not end up inside itself.
    const value = JSON.parse(JSON.stringify(m.value)) as unknown;
    const all = containers(root);
    if (all.length === 0) {
      root = value;
      continue;
    }
    const target = all[m.where % all.length]!;
    const keys = Object.keys(target);
    if (m.op === "add" || keys.length === 0) {
      if (Array.isArray(target)) target.push(value);
      else setOwn(target, m.key, value);
    } else {
      const key = keys[m.pick % keys.length]!;
      if (m.op === "delete") {
        if (Array.isArray(target)) target.splice(Number(key), 1);
        else delete target[key];
      } else setOwn(target, Array.isArray(target) ? Number(key) : key, value);
    }
  }
  return JSON.stringify(root);
}

const bytes = (text: string) => new TextEncoder().encode(text);

/** decodeEvent and the zod-only decoding agree on one message, to the key order. */
function expectSameDecoding(text: string): void {
  const fast = decodeEvent(bytes(text), 5, "m-1");
  const reference = decodeParsed(JSON.parse(text) as unknown, 5, "m-1");
  expect(JSON.stringify(fast)).toBe(JSON.stringify(reference));
  expect(differences(fast, reference)).toStrictEqual([]);
}

/**
 * Where two decoded values differ: own keys (in order, `undefined` values and
 * `__proto__` keys included), prototypes and primitive values. (toStrictEqual
 * would call two equal objects with an own `constructor` key different.)
 */
function differences(a: unknown, b: unknown, path = "$"): string[] {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return Object.is(a, b) ? [] : [path];
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return [`${path} (prototype)`];
  const keysA = Reflect.ownKeys(a);
  const keysB = Reflect.ownKeys(b);
  if (JSON.stringify(keysA.map(String)) !== JSON.stringify(keysB.map(String))) return [`${path} (keys)`];
  return keysA.flatMap((k) =>
    differences((a as Record<string, unknown>)[k as string], (b as Record<string, unknown>)[k as string], `${path}.${String(k)}`),
  );
}

/** Each compiled predicate says yes only where zod does, at every level of the value. */
function expectCompiledNoLooser(value: unknown): void {
  const data = typeof value === "object" && value !== null ? (value as { data?: unknown }).data : undefined;
  for (const [type, schema] of Object.entries(DATA_SCHEMAS)) {
    const accepts = compileSchema(schema)!;
    for (const candidate of [value, data]) {
      if (accepts(candidate)) expect(schema.safeParse(candidate).success, `${type} accepted ${JSON.stringify(candidate)}`).toBe(true);
    }
  }
}

describe("decoding through the compiled schemas", () => {
  let corpus: unknown[] = [...HAND_WRITTEN];

  beforeAll(async () => {
    const sim = await simulateWorkload({ events: 1500, seed: 11 });
    const decoder = new TextDecoder();
    corpus = [...HAND_WRITTEN, ...sim.log.messages.map((m) => JSON.parse(decoder.decode(m.payload)) as unknown)];
  }, 60_000);

  it("compiles every event type's schema (so valid events skip zod)", () => {
    for (const [type, schema] of Object.entries(DATA_SCHEMAS)) expect(compileSchema(schema), type).not.toBeNull();
  });

  it("accepts every valid event, as the schemas return it", () => {
    const types = new Set<string>();
    for (const event of corpus) {
      const text = JSON.stringify(event);
      const entry = decodeEvent(bytes(text), 1);
      expect(entry).toHaveProperty("event");
      types.add((event as { type: string }).type);
      expect(compileSchema(DATA_SCHEMAS[(event as { type: string }).type]!)!((event as { data: unknown }).data)).toBe(true);
      expectSameDecoding(text);
      expect(JSON.parse(new TextDecoder().decode(encodeEvent((entry as { event: EventEnvelope }).event)))).toStrictEqual(event);
    }
    expect([...types].sort()).toStrictEqual(Object.keys(DATA_SCHEMAS).sort());
  });

  it("accepts and rejects what the schemas do, on mutated events", () => {
    fc.assert(
      fc.property(fc.nat(), fc.array(mutationArb, { minLength: 1, maxLength: 3 }), (index, mutations) => {
        const text = mutate(corpus[index % corpus.length], mutations);
        expectSameDecoding(text);
        expectCompiledNoLooser(JSON.parse(text));
      }),
      { numRuns: 3000 },
    );
  });

  it("agrees on the odd cases one by one", () => {
    const base = HAND_WRITTEN[1] as Record<string, unknown>;
    const cases = [
      "[]",
      "null",
      "1",
      '"x"',
      "{}",
      JSON.stringify({ ...base, extra: 1, v: 1 }),
      JSON.stringify({ ...base, type: "toString" }),
      JSON.stringify({ ...base, type: "constructor" }),
      JSON.stringify({ ...base, requestId: "" }),
      JSON.stringify({ ...base, requestId: "x".repeat(129) }),
      JSON.stringify({ ...base, data: [] }),
      JSON.stringify({ ...base, data: null }),
      JSON.stringify({ ...base, at: "2026-03-01T00:00:01.961" }),
      '{"__proto__":{"type":"LockReset"},"v":1,"at":"2026-03-01T00:00:01.961Z","kind":"lock","id":"a","data":{"generation":0}}',
      '{"type":"LockReset","v":1,"at":"2026-03-01T00:00:01.961Z","kind":"lock","id":"a","data":{"generation":0,"__proto__":{"x":1}}}',
      '{"type":"LockReset","v":1,"at":"2026-03-01T00:00:01.961Z","kind":"lock","id":"a","data":{"generation":0,"constructor":1}}',
      '{"type":"ProxyRegistered","v":1,"at":"2026-03-01T00:00:01.961Z","kind":"proxy","id":"p","data":{"maxLeases":1,"latencyMs":1,"healthy":true,"labels":{"__proto__":5}}}',
      '{"type":"LockReset","v":1,"at":"2026-03-01T00:00:01.961Z","kind":"lock","id":"a","data":{"generation":-0}}',
      '{"type":"LockReleased","v":1,"at":"2026-03-01T00:00:01.961Z","kind":"lock","id":"a","data":{"owner":"w","generation":-0}}',
    ];
    for (const text of cases) expectSameDecoding(text);
    expect(decodeEvent(bytes("{"), 1)).toMatchObject({ unparsable: true });
    expect(decodeEvent(new Uint8Array([0x7b, 0xff, 0x7d]), 1)).toMatchObject({ unparsable: true });
  });
});
