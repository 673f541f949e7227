/**
 * The JSON subset parser (src/events/json-subset.ts) answers what
 * `JSON.parse` answers, keys in the same order, or nothing: over any JSON
 * `JSON.stringify` writes, over that JSON cut, spliced and with whitespace,
 * escapes and odd keys put in, and over texts parsed one after another (it
 * remembers the keys it read last at each place).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseJsonSubset } from "../../src/events/json-subset.ts";

const utf8 = new TextEncoder();

/** Where two parsed values differ: own keys in order (`__proto__` included), prototypes, primitives (-0 apart from 0). */
function differences(a: unknown, b: unknown, path = "$"): string[] {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return Object.is(a, b) ? [] : [path];
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return [`${path} (prototype)`];
  const keysA = Reflect.ownKeys(a).map(String);
  const keysB = Reflect.ownKeys(b).map(String);
  if (JSON.stringify(keysA) !== JSON.stringify(keysB)) return [`${path} (keys ${JSON.stringify(keysA)} ≠ ${JSON.stringify(keysB)})`];
  return keysA.flatMap((k) => differences((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`));
}

/** What JSON.parse makes of `text`, or the error it throws. */
function reference(text: string): { value: unknown } | { error: true } {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return { error: true };
  }
}

/** The subset parser answers `JSON.parse`'s value or nothing; returns whether it answered. */
function expectAgrees(text: string): boolean {
  const parsed = parseJsonSubset(text, utf8.encode(text));
  if (parsed === undefined) return false;
  const expected = reference(text);
  expect(expected, text).toHaveProperty("value");
  expect(differences(parsed, (expected as { value: unknown }).value), text).toStrictEqual([]);
  return true;
}

const EVENT =
  '{"type":"LockAcquired","v":1,"at":"2026-03-01T00:00:01.961Z","kind":"lock","id":"a","requestId":"r-1","data":{"owner":"w","generation":2,"ttlMs":5,"expiresAt":"2026-03-01T00:00:06.961Z","previousOwner":""}}';

/** Keys that JSON.parse and plain assignment treat apart, keys that look like indexes, and the events' own. */
const keyArb = fc.oneof(
  fc.constantFrom("__proto__", "constructor", "toString", "0", "1", "01", "-1", "4294967295", "type", "id", "data", "", "a\\b", 'a"b'),
  fc.string({ maxLength: 4 }),
);
/** JSON values with odd keys, numbers at the edges of the subset's and strings with what needs escaping. */
const valueArb: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom(0, -0, 1, -1, 1.5, 1e21, 2 ** 53 - 1, 2 ** 53, 123456789012345, -12345678901234, 1234567890123456, true, false, null),
    fc.string({ unit: "binary", maxLength: 6 }),
    fc.string({ maxLength: 30 }),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.array(fc.tuple(keyArb, tie("value")), { maxLength: 4 }).map((entries) => {
      const object: Record<string, unknown> = {};
      for (const [k, v] of entries) Object.defineProperty(object, k, { value: v, enumerable: true, writable: true, configurable: true });
      return object;
    }),
  ),
})).value;

describe("the JSON subset parser", () => {
  it("reads an event as JSON.parse does, and again with the keys it remembers", () => {
    expect(expectAgrees(EVENT)).toBe(true);
    expect(expectAgrees(EVENT)).toBe(true);
    expect(expectAgrees(EVENT.replace('"requestId":"r-1",', ""))).toBe(true);
    expect(expectAgrees(EVENT.replace('"id":"a"', '"idx":"a"'))).toBe(true);
    expect(expectAgrees(EVENT.replace('"id":"a"', '"i":"a"'))).toBe(true);
    // Long strings are copied from the bytes, short ones sliced: both read the same.
    expect(expectAgrees(EVENT.replace('"owner":"w"', `"owner":"${"w".repeat(12)}"`))).toBe(true);
    expect(expectAgrees(EVENT.replace('"owner":"w"', `"owner":"${"w".repeat(13)}"`))).toBe(true);
    // Text that is not all ASCII is JSON.parse's.
    expect(expectAgrees(EVENT.replace('"owner":"w"', '"owner":"é"'))).toBe(false);
  });

  it("answers JSON.parse's value or nothing, for anything JSON.stringify writes", () => {
    fc.assert(
      fc.property(valueArb, (value) => {
        expectAgrees(JSON.stringify(value));
      }),
      { numRuns: 3000 },
    );
  });

  it("reads most of what JSON.stringify writes", () => {
    let answered = 0;
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 3 }), (value) => {
        if (expectAgrees(JSON.stringify(value))) answered++;
      }),
      { numRuns: 500 },
    );
    expect(answered).toBeGreaterThan(100);
  });

  it("answers nothing for text JSON.parse refuses, or parses otherwise", () => {
    const cases = [
      "",
      " ",
      "{",
      "}",
      "[",
      "[1,]",
      "[,1]",
      '{"a":1,}',
      '{"a":1 }',
      '{ "a":1}',
      '{"a" :1}',
      "[1 ]",
      " 1",
      "1 ",
      "01",
      "-",
      "-01",
      "1.",
      ".5",
      "+1",
      "1e5",
      "1E5",
      "0.5",
      "1234567890123456",
      "tru",
      "nul",
      "falsey",
      '"a',
      '"a\\"b"',
      '"\\u0041"',
      '"a\tb"',
      '"a\nb"',
      '{"a":1,"a":2}',
      '{"__proto__":{"x":1}}',
      '{"a":1}x',
      "[".repeat(40) + "]".repeat(40),
      "NaN",
      "Infinity",
      '{"a":undefined}',
      "{'a':1}",
    ];
    // Each is refused by JSON.parse (then the parser must answer nothing too) or outside the subset on purpose.
    for (const text of cases) expect(expectAgrees(text), text).toBe(false);
  });

  it("agrees with JSON.parse on texts cut, spliced and read one after another", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.oneof(
              fc.constant(EVENT),
              valueArb.map((v) => JSON.stringify(v)),
            ),
            fc.nat(),
            fc.nat(),
            fc.string({ maxLength: 3 }),
          ),
          { minLength: 1, maxLength: 6 },
        ),
        (texts) => {
          for (const [text, from, to, insert] of texts) {
            // Whole, then with a piece replaced: the keys remembered from the whole text meet a changed one.
            expectAgrees(text);
            const a = from % (text.length + 1);
            const b = a + (to % (text.length - a + 1));
            expectAgrees(text.slice(0, a) + insert + text.slice(b));
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});
