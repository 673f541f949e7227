/**
 * The 1.2 choosers against reference models written straight from the
 * contract's text (BigInt scores, a full sort, no shortcuts): least-load
 * (known loads first, lowest first, then fewest active leases, then name)
 * and bounded-hash (hosts in descending order of the first 8 bytes of
 * SHA-256 over `route NUL model NUL host`, the first within
 * `ceil(c * (A + 1) / n)`), and bounded-hash's bound itself over whole runs
 * of placements.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  boundedHashChooser,
  boundedHashScore,
  chooserNamed,
  DEFAULT_HASH_BALANCE_FACTOR,
  leastLoadChooser,
} from "../../src/route/chooser.ts";

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The contract's least-load, as a sort of every candidate. */
function referenceLeastLoad(eligible: readonly string[], counts: ReadonlyMap<string, number>, loads: ReadonlyMap<string, number>) {
  const hosts = [...new Set(eligible)];
  hosts.sort((a, b) => {
    const la = loads.get(a);
    const lb = loads.get(b);
    if (la !== undefined && lb === undefined) return -1;
    if (la === undefined && lb !== undefined) return 1;
    if (la !== undefined && lb !== undefined && la !== lb) return la - lb;
    return (counts.get(a) ?? 0) - (counts.get(b) ?? 0) || byCodeUnit(a, b);
  });
  return hosts[0];
}

/** The contract's score: SHA-256 of `route NUL model NUL host`, first 8 bytes, big-endian unsigned. */
function referenceScore(route: string, model: string, host: string): bigint {
  const digest = createHash("sha256")
    .update(Buffer.from(`${route}\u0000${model}\u0000${host}`, "utf8"))
    .digest();
  let n = 0n;
  for (let i = 0; i < 8; i++) n = (n << 8n) | BigInt(digest[i]!);
  return n;
}

/** The contract's bounded-hash: the hosts in descending score (ties by name), the first within the bound. */
function referenceBoundedHash(
  route: string,
  model: string,
  eligible: readonly string[],
  counts: ReadonlyMap<string, number>,
  c: number,
): string | undefined {
  const hosts = [...new Set(eligible)];
  if (hosts.length === 0) return undefined;
  const total = hosts.reduce((sum, h) => sum + (counts.get(h) ?? 0), 0);
  const bound = Math.ceil((c * (total + 1)) / hosts.length);
  const ordered = hosts
    .map((h) => ({ h, s: referenceScore(route, model, h) }))
    .sort((a, b) => (a.s > b.s ? -1 : a.s < b.s ? 1 : byCodeUnit(a.h, b.h)));
  return ordered.find(({ h }) => (counts.get(h) ?? 0) + 1 <= bound)?.h;
}

const hostName = fc.oneof(
  fc.constantFrom("a", "b", "c", "Z", "gpu-1", "gpu-2", "é", "h.1", "h 2"),
  fc.string({ minLength: 1, maxLength: 6 }),
);
const hostsArb = fc.array(hostName, { maxLength: 12 });
const countsOf = (hosts: readonly string[]) =>
  fc.array(fc.nat({ max: 20 }), { minLength: hosts.length, maxLength: hosts.length }).map((n) => new Map(hosts.map((h, i) => [h, n[i]!])));
const factor = fc.oneof(fc.constantFrom(1.25, 1.01, 2, 1.5, 10), fc.double({ min: 1.0001, max: 50, noNaN: true }));
const text = fc.oneof(fc.constantFrom("", "chat", "llama-3", "r/1"), fc.string({ maxLength: 8 }));

describe("least-load chooser", () => {
  it("picks as the contract's order does: known loads lowest first, then unknown; ties by fewest leases, then name", () => {
    fc.assert(
      fc.property(
        hostsArb.chain((hosts) =>
          fc.tuple(
            fc.constant(hosts),
            countsOf(hosts),
            // Some hosts with a load (small numbers, so ties happen), the others unknown.
            fc.array(fc.option(fc.oneof(fc.nat({ max: 3 }), fc.double({ min: 0, max: 5, noNaN: true })), { nil: undefined }), {
              minLength: hosts.length,
              maxLength: hosts.length,
            }),
          ),
        ),
        ([hosts, counts, loadList]) => {
          const loads = new Map<string, number>();
          hosts.forEach((h, i) => {
            if (loadList[i] !== undefined) loads.set(h, loadList[i]);
          });
          const key = { route: "r", fp: "f", model: "m" };
          expect(leastLoadChooser.choose(key, hosts, counts, loads)).toBe(referenceLeastLoad(hosts, counts, loads));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("without any known load is the least-loaded order; a known load beats every unknown one however busy", () => {
    const key = { route: "r", fp: "", model: "m" };
    const counts = new Map([
      ["a", 5],
      ["b", 1],
      ["c", 9],
    ]);
    expect(leastLoadChooser.choose(key, ["a", "b", "c"], counts)).toBe("b");
    expect(leastLoadChooser.choose(key, ["a", "b", "c"], counts, new Map([["c", 100]]))).toBe("c");
    expect(
      leastLoadChooser.choose(
        key,
        ["a", "b", "c"],
        counts,
        new Map([
          ["a", 0.5],
          ["c", 0.5],
        ]),
      ),
    ).toBe("a");
    expect(leastLoadChooser.choose(key, [], counts)).toBeUndefined();
  });
});

describe("bounded-hash chooser", () => {
  it("scores by the first 8 bytes of SHA-256 over route NUL model NUL host, big-endian (the fp plays no part)", () => {
    fc.assert(
      fc.property(text, text, hostName, (route, model, host) => {
        expect(boundedHashScore({ route, model }, host)).toBe(referenceScore(route, model, host));
      }),
    );
    const key = { route: "chat", model: "llama" };
    const hosts = ["h1", "h2", "h3", "h4"];
    const chooser = boundedHashChooser(DEFAULT_HASH_BALANCE_FACTOR);
    const picks = new Set(["c1", "c2", "c3"].map((fp) => chooser.choose({ ...key, fp }, hosts, new Map())));
    expect(picks.size).toBe(1);
  });

  it("picks what the reference picks, for any candidates, leases and balance factor", () => {
    fc.assert(
      fc.property(
        text,
        text,
        hostsArb.chain((hosts) => fc.tuple(fc.constant(hosts), countsOf(hosts))),
        factor,
        (route, model, [hosts, counts], c) => {
          expect(boundedHashChooser(c).choose({ route, fp: "x", model }, hosts, counts)).toBe(
            referenceBoundedHash(route, model, hosts, counts, c),
          );
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("answers as the reference when asked again and again for one route with other leases (its remembered order)", () => {
    const chooser = boundedHashChooser(1.25);
    const hosts = ["h1", "h2", "h3", "h4", "h5", "h6"];
    fc.assert(
      fc.property(countsOf(hosts), fc.constantFrom("chat", "search"), fc.subarray(hosts, { minLength: 1 }), (counts, route, some) => {
        expect(chooser.choose({ route, fp: "x", model: "m" }, some, counts)).toBe(referenceBoundedHash(route, "m", some, counts, 1.25));
      }),
      { numRuns: 1000 },
    );
  });

  it("never leaves a host above ceil(c * (A + 1) / n) after a new placement, and always places on some host", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(hostName, { minLength: 1, maxLength: 10 }),
        factor,
        fc.array(fc.tuple(fc.constantFrom("r1", "r2", "r3"), fc.constantFrom("m", "")), { minLength: 1, maxLength: 150 }),
        (hosts, c, placements) => {
          const chooser = boundedHashChooser(c);
          const counts = new Map<string, number>();
          for (const [route, model] of placements) {
            const total = hosts.reduce((s, h) => s + (counts.get(h) ?? 0), 0);
            const bound = Math.ceil((c * (total + 1)) / hosts.length);
            const host = chooser.choose({ route, fp: "", model }, hosts, counts);
            expect(host).toBeDefined();
            counts.set(host!, (counts.get(host!) ?? 0) + 1);
            for (const h of hosts) expect(counts.get(h) ?? 0).toBeLessThanOrEqual(bound);
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it("with room on every host, keeps a (route, model) on its top host, and removing a host moves only the keys it had", () => {
    const roomy = boundedHashChooser(1000);
    const hosts = ["h1", "h2", "h3", "h4", "h5"];
    const keys = Array.from({ length: 200 }, (_, i) => ({ route: `r${i}`, fp: "", model: "m" }));
    const before = keys.map((k) => roomy.choose(k, hosts, new Map())!);
    const after = keys.map((k) =>
      roomy.choose(
        k,
        hosts.filter((h) => h !== "h3"),
        new Map(),
      ),
    );
    keys.forEach((k, i) => {
      expect(before[i]).toBe(referenceBoundedHash(k.route, k.model, hosts, new Map(), 1e9));
      if (before[i] !== "h3") expect(after[i]).toBe(before[i]);
    });
  });

  it("breaks a tie of scores by the smallest name (over a digest that ties on purpose)", () => {
    const tie = () => Buffer.alloc(32, 7);
    const chooser = boundedHashChooser(1.25, tie);
    expect(chooser.choose({ route: "r", fp: "", model: "m" }, ["b", "c", "a"], new Map())).toBe("a");
    // a holds 3: 3 + 1 exceeds ceil(1.25 * (4 + 1) / 3) = 3, so b, next in order, takes it.
    expect(
      chooser.choose(
        { route: "r", fp: "", model: "m" },
        ["b", "c", "a"],
        new Map([
          ["a", 3],
          ["b", 1],
        ]),
      ),
    ).toBe("b");
  });

  it("counts a candidate given twice once (n and A are over distinct hosts)", () => {
    const key = { route: "r", fp: "", model: "m" };
    const counts = new Map([
      ["a", 4],
      ["b", 0],
    ]);
    const chooser = boundedHashChooser(1.25);
    expect(chooser.choose(key, ["a", "b", "a", "a"], counts)).toBe(chooser.choose(key, ["a", "b"], counts));
  });

  it("takes only a balance factor above 1, and is what --route-chooser bounded-hash names", () => {
    for (const bad of [1, 0.5, 0, -2, NaN, Infinity]) expect(() => boundedHashChooser(bad)).toThrow(/> 1/);
    expect(chooserNamed("bounded-hash").name).toBe("bounded-hash");
    expect(chooserNamed("least-load")).toBe(leastLoadChooser);
  });
});
