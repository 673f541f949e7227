/**
 * The tools' stored instants agree with the event log's (BigInt nanoseconds
 * divided by 10^6) for every nanosecond count, those a few nanoseconds from
 * a millisecond boundary included, where the client's rounded double alone
 * would be off by one; and the exact BigInt is read only near a boundary.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { storedMillis } from "../../src/events/stored-time.ts";

/** A delivered message as the client parses it: `info.timestampNanos` is parseInt's double, `timestampNanos` the exact BigInt. */
function delivered(nanos: bigint, onExactRead: () => void = () => undefined) {
  return {
    info: { timestampNanos: Number(nanos) } as never,
    get timestampNanos() {
      onExactRead();
      return nanos;
    },
  };
}

const instants = fc.oneof(
  fc.bigInt({ min: 0n, max: 10n ** 19n - 1n }),
  // Near a millisecond boundary, at today's magnitudes, where the double's rounding matters.
  fc
    .tuple(fc.bigInt({ min: 10n ** 12n, max: 10n ** 13n - 1n }), fc.integer({ min: -5000, max: 5000 }))
    .map(([ms, ns]) => ms * 1_000_000n + BigInt(ns)),
);

describe("storedMillis", () => {
  it("equals the BigInt division for every instant", () => {
    fc.assert(
      fc.property(instants, (nanos) => {
        expect(storedMillis(delivered(nanos))).toBe(Number(nanos / 1_000_000n));
      }),
      { numRuns: 5000 },
    );
  });

  it("is right where the double alone is wrong", () => {
    // 1796165757274 ms and 999,999,950 ns: parseInt's double rounds up to the next millisecond.
    const nanos = 1796165757274_999_950n;
    expect(Math.floor(Number(nanos) / 1e6)).toBe(1796165757275);
    expect(storedMillis(delivered(nanos))).toBe(1796165757274);
  });

  it("reads the exact BigInt only within a few microseconds of a millisecond boundary", () => {
    let exactReads = 0;
    const count = () => void exactReads++;
    storedMillis(delivered(1796165757274_500_000n, count));
    storedMillis(delivered(1796165757274_003_000n, count));
    expect(exactReads).toBe(0);
    storedMillis(delivered(1796165757274_000_100n, count));
    storedMillis(delivered(1796165757274_999_900n, count));
    expect(exactReads).toBe(2);
  });
});
