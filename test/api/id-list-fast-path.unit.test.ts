/**
 * The identifier-list fast path of request validation (route.acquire's
 * candidates, route.candidates' hosts) answers exactly as the zod schema
 * alone: the same request for a valid body, the same refusal otherwise.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { routeRequests } from "../../src/route/requests.ts";
import { optionalId, parseBody, parseRequest, requestBase, requiredId, validate } from "../../src/transport/endpoint.ts";

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

describe("known list tails", () => {
  const fleet = Array.from({ length: 40 }, (_, i) => `h${i}`);
  const lists = [
    fleet,
    fleet.slice(0, 33),
    [...fleet].reverse(),
    [...fleet.slice(1), ""],
    [...fleet.slice(1), "\ud800"],
    fleet.slice(0, 5),
  ];
  const heads = [
    '{"route":"r1","fp":"c1","model":"m"',
    '{"route":"r1","fp":"","model":"m","requestId":"q1"',
    '{ "route" : "r1" , "fp":"c2","model":"m" ',
    '\ufeff{"route":"r1","fp":"c1","model":"m"',
    '{"route":"r1","fp":"c1","model":"m","candidates":["x"]',
    '{"route":"","fp":"c1","model":"m"',
    '{"route":"r1","fp":"c1"',
    '{"route":"r1","fp":"c1","model":"m","extra":{"a":[1,2]}',
    '{"route":"r1","fp":"c1","model":"m',
    '{"x":{"route":"r1","fp":"c1","model":"m"',
    '["r1"',
    "{",
    "",
    '{"route":"r1","fp":"c1","model":"m",',
  ];
  const encoder = new TextEncoder();
  /** The whole body through zod alone, as before known tails. */
  const plain = (data: Uint8Array) => {
    const b = parseBody(data);
    return b.ok ? validate(plainAcquire as z.ZodType<unknown>, b.value) : b;
  };

  it("answers as parsing the whole body, whatever precedes a known list", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            head: fc.constantFrom(...heads),
            list: fc.constantFrom(...lists),
            // Rare: a body that is not compact stops the learning for a while.
            spaced: fc.constantFrom(false, false, false, false, false, false, false, false, false, true),
            badByte: fc.boolean(),
          }),
          { minLength: 10, maxLength: 40 },
        ),
        (bodies) => {
          for (const { head, list, spaced, badByte } of bodies) {
            const tail = spaced ? `, "candidates": ${JSON.stringify(list, null, 1)}}` : `,"candidates":${JSON.stringify(list)}}`;
            let data = encoder.encode(head + tail);
            if (badByte && data.length > 3) {
              data = data.slice();
              data[1] = 0xff;
            }
            const fast = parseRequest(routeRequests.acquire as z.ZodType<unknown>, data);
            const slow = plain(data);
            expect(fast.ok).toBe(slow.ok);
            if (fast.ok && slow.ok) expect(frozenCopy(fast.value)).toEqual(frozenCopy(slow.value));
            else expect(fast).toEqual(slow);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("reuses the list parsed before for the same bytes", () => {
    const body = (fp: string) => encoder.encode(JSON.stringify({ route: "r", fp, model: "m", candidates: fleet }));
    // Enough bodies for the learning to resume after any non-compact body of the test above.
    for (let i = 0; i < 70; i++) parseRequest(routeRequests.acquire, body(`warm${i}`));
    const first = parseRequest(routeRequests.acquire, body("c1"));
    const second = parseRequest(routeRequests.acquire, body("c2"));
    expect(first.ok && second.ok).toBe(true);
    if (!first.ok || !second.ok) return;
    expect(second.value).toEqual({ route: "r", fp: "c2", model: "m", candidates: fleet });
    expect(second.value.candidates).toBe(first.value.candidates);
    expect(Object.isFrozen(second.value.candidates)).toBe(true);
  });
});
