/**
 * The identifier-list fast path of request validation (route.acquire's
 * candidates, route.candidates' hosts) answers exactly as the zod schema
 * alone: the same request for a valid body, the same refusal otherwise.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { routeRequests } from "../../src/api/route-requests.ts";
import { optionalId, requestBase, requiredId, validate } from "../../src/api/validation.ts";

// The same schemas, built again so they carry no fast path: zod alone.
const key = { route: requiredId, fp: optionalId, model: optionalId };
const plainAcquire = requestBase.extend({ ...key, candidates: z.array(requiredId).readonly() });
const plainCandidates = requestBase.extend({ route: requiredId, hosts: z.array(requiredId).readonly() });

const longId = "x".repeat(257);
const longMultiByte = "é".repeat(129); // 258 UTF-8 bytes in 129 code units
const oddItems = ["", "\ud800", "a\udc00b", longId, longMultiByte, "é".repeat(128), "h1", "h2", 7, null, {}, ["h1"], true];

const item = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom("h0", "h1", "h2", "gpu-7", "é") },
  { weight: 1, arbitrary: fc.constantFrom(...oddItems) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 100 }) },
);
const field = fc.oneof({ weight: 6, arbitrary: fc.constantFrom("r1", "", "c1") }, { weight: 1, arbitrary: fc.constantFrom(...oddItems) });
const list = fc.oneof({ weight: 8, arbitrary: fc.array(item, { maxLength: 12 }) }, { weight: 1, arbitrary: fc.constantFrom(...oddItems) });

/** A body: each field present or absent, valid or not, plus sometimes a field no schema knows. */
const body = fc.record(
  { requestId: field, route: field, fp: field, model: field, candidates: list, hosts: list, extra: field },
  { requiredKeys: [] },
);

function frozenCopy(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, Array.isArray(v) ? { list: [...(v as unknown[])], frozen: Object.isFrozen(v) } : v]),
  );
}

describe("identifier-list fast path", () => {
  it("gives the result zod alone gives, for valid and invalid bodies alike", () => {
    fc.assert(
      fc.property(body, (b) => {
        for (const [withFast, alone] of [
          [routeRequests.acquire, plainAcquire],
          [routeRequests.candidates, plainCandidates],
        ] as const) {
          const fast = validate(withFast as z.ZodType<unknown>, structuredClone(b));
          const slow = validate(alone as z.ZodType<unknown>, structuredClone(b));
          expect(fast.ok).toBe(slow.ok);
          if (fast.ok && slow.ok) expect(frozenCopy(fast.value)).toEqual(frozenCopy(slow.value));
          else expect(fast).toEqual(slow);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it("accepts a 1,000-host list and refuses one bad host by its index, as before", () => {
    const candidates = Array.from({ length: 1000 }, (_, i) => `h${i}`);
    const ok = validate(routeRequests.acquire as z.ZodType<unknown>, { route: "r", fp: "", model: "m", candidates });
    expect(ok).toEqual({ ok: true, value: { route: "r", fp: "", model: "m", candidates } });
    const bad = validate(routeRequests.acquire as z.ZodType<unknown>, {
      route: "r",
      fp: "",
      model: "m",
      candidates: [...candidates.slice(0, 500), "", ...candidates.slice(500)],
    });
    expect(bad).toEqual({ ok: false, rejection: expect.objectContaining({ message: "candidates.500: must not be empty" }) });
  });
});
