/**
 * instantMs is Date.parse: on canonical instants over the whole range of
 * years, on every day of every month (the 29th–31st go to Date.parse), and
 * on near misses (a wrong separator, a digit out of place, an hour of 24,
 * a missing Z, another length).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { instantMs } from "../../src/events/envelope.ts";

const MIN_MS = Date.parse("0000-01-01T00:00:00.000Z");
const MAX_MS = Date.parse("9999-12-31T23:59:59.999Z");
const canonical = fc.integer({ min: MIN_MS, max: MAX_MS }).map((ms) => new Date(ms).toISOString());

/** A canonical instant with one character replaced: most are not instants, some are other valid ones. */
const nearMiss = fc
  .tuple(canonical, fc.nat(23), fc.constantFrom(..."0123456789-:.TZ +x"))
  .map(([s, i, c]) => s.slice(0, i) + c + s.slice(i + 1));

describe("instantMs", () => {
  it("equals Date.parse on canonical instants, near misses and other strings", () => {
    const strings = fc.oneof(canonical, nearMiss, fc.string(), fc.constantFrom("2026-02-30T00:00:00.000Z", "2026-01-01T24:00:00.000Z"));
    fc.assert(
      fc.property(strings, (s) => {
        expect(instantMs(s)).toBe(Date.parse(s));
      }),
      { numRuns: 20_000 },
    );
    // 20,000 runs take about 1.5 s alone and were seen past the 5 s default on a machine running other suites: the bound is the work, not the clock.
  }, 30_000);

  it("answers a repeated instant as it did the first time, whatever came between", () => {
    const a = "2026-03-01T00:00:00.000Z";
    const b = "2026-03-01T00:00:00.001Z";
    for (const s of [a, a, b, a, "", a, "garbage", "garbage", b]) expect(instantMs(s), s).toBe(Date.parse(s));
  });

  it("equals Date.parse on every day of every month around leap years and the epoch", () => {
    for (const year of [1969, 1970, 1999, 2000, 2024, 2026, 2100]) {
      for (let month = 1; month <= 12; month++) {
        for (let day = 1; day <= 31; day++) {
          const s = `${year}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}T23:59:59.999Z`;
          expect(instantMs(s), s).toBe(Date.parse(s));
        }
      }
    }
  });
});
