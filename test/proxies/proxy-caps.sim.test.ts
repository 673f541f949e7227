/**
 * Caps under random concurrency: two service instances on one in-memory log
 * take random batches of concurrent acquisitions, releases, reports and
 * re-registrations (cap changes included) while the clock moves; judged from
 * the stream alone, no proxy ever held more unexpired leases than its cap at
 * the instant of a grant, and both instances report the same counts.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { startProxyHarness } from "../support/proxy-harness.ts";
import { capViolations } from "../support/proxy-caps.ts";

const NAMES = ["p", "q", "r"] as const;

type Op =
  | { kind: "acquire"; via: 0 | 1; ttlMs: number; target: string }
  | { kind: "release"; via: 0 | 1; pick: number }
  | { kind: "report"; via: 0 | 1; pick: number }
  | { kind: "register"; via: 0 | 1; name: string; maxLeases: number };

const via = fc.constantFrom(0 as const, 1 as const);
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("acquire" as const),
      via,
      ttlMs: fc.constantFrom(50, 500, 5000),
      target: fc.constantFrom("", "t"),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("release" as const), via, pick: fc.nat(40) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("report" as const), via, pick: fc.nat(40) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("register" as const),
      via,
      name: fc.constantFrom(...NAMES),
      maxLeases: fc.integer({ min: 0, max: 3 }),
    }),
  },
);

describe("caps under random concurrency on two instances", () => {
  it("are never exceeded, judged from the stream", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.array(op, { minLength: 1, maxLength: 12, size: "max" }), fc.integer({ min: 0, max: 600 })), {
          minLength: 1,
          maxLength: 8,
        }),
        async (batches) => {
          let ids = 0;
          const newId = () => `L${++ids}`;
          const a = await startProxyHarness({ cooldownMs: 1000, newId });
          const b = await startProxyHarness({ cooldownMs: 1000, newId, log: a.log, clock: a.clock });
          const instances = [a, b] as const;
          try {
            for (const [i, name] of NAMES.entries()) {
              const r = await a.call("register", { proxy: name, maxLeases: i + 1 });
              expect(r.ok).toBe(true);
            }
            const leases: string[] = [];
            for (const [ops, advance] of batches) {
              const results = await Promise.all(
                ops.map((o) => {
                  const h = instances[o.via];
                  switch (o.kind) {
                    case "acquire":
                      return h.call("acquire", { ttlMs: o.ttlMs, target: o.target });
                    case "release":
                      return h.call("release", { leaseId: leases[o.pick % Math.max(1, leases.length)] ?? "none" });
                    case "report":
                      return h.call("report", { leaseId: leases[o.pick % Math.max(1, leases.length)] ?? "none", result: "rate_limited" });
                    case "register":
                      return h.call("register", { proxy: o.name, maxLeases: o.maxLeases });
                  }
                }),
              );
              for (const [i, r] of results.entries()) {
                if (ops[i]!.kind === "acquire") {
                  if (r.ok) leases.push((r.reply as { lease: { id: string } }).lease.id);
                  else expect(["NO_MATCH"]).toContain(r.rejection.code);
                } else if (ops[i]!.kind === "report" && !r.ok) {
                  expect(r.rejection.code).toBe("UNKNOWN_LEASE");
                } else {
                  expect(r.ok).toBe(true);
                }
              }
              a.clock.advance(advance);
            }
            const events = a.events();
            expect(capViolations(events)).toEqual([]);
            expect(events.filter((e) => e.event.type === "ProxyLeaseGranted")).toHaveLength(leases.length);
            // Both instances agree on what the stream says.
            const [ca, cb] = await Promise.all([a.call("counts", {}), b.call("counts", {})]);
            expect(ca).toEqual(cb);
          } finally {
            await a.stop();
            await b.stop();
          }
        },
      ),
      { numRuns: 100 },
    );
  });
});
