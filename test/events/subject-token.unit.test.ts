import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { decodeToken, EMPTY_TOKEN, encodeToken, InvalidTokenError } from "../../src/contract/subjects.ts";

const utf8 = new TextEncoder();
const utf8Bytes = (s: string): number => utf8.encode(s).length;

/** The longest prefix of `s`, by whole code points, that fits in 256 UTF-8 bytes. */
function fitTo256Bytes(s: string): string {
  let out = "";
  let bytes = 0;
  for (const ch of s) {
    bytes += utf8Bytes(ch);
    if (bytes > 256) break;
    out += ch;
  }
  return out;
}
/**
 * Identifiers the contract allows: well-formed Unicode, at most 256 UTF-8 bytes, empty included.
 * size "max" spreads lengths over the whole range (fast-check's default size stops near 10 characters).
 */
const anyIdentifier = fc
  .string({ unit: "binary", maxLength: 256, size: "max" })
  .map(fitTo256Bytes)
  .filter((s) => s.isWellFormed());
/** Identifiers dense in the characters that matter to subjects, so the interesting cases come up often. */
const trickyIdentifier = fc
  .string({
    unit: fc.constantFrom(
      ...[".", "*", ">", " ", "\t", "~", "/", "a", "Z", "0", "_", "-", "é", "😀", "\u0000", "\u00a0", "%"],
      // What a decoder or a normalizer may drop or fold: a byte-order mark, zero-width characters,
      // both normalization forms of é and Å, a replacement character, an astral letter.
      ...["\uFEFF", "\u200B", "\u200C", "\u200D", "\u2060", "e\u0301", "A\u030A", "\u00C5", "\uFFFD", "\u{1D400}"],
    ),
    maxLength: 256,
    size: "max",
  })
  .map(fitTo256Bytes);
const identifier = fc.oneof(anyIdentifier, trickyIdentifier);

/** A single valid NATS subject token, ASCII only. */
function expectValidToken(token: string): void {
  expect(token.length).toBeGreaterThan(0);
  expect(token).not.toMatch(/[.*>\s]/);
  expect(token).toMatch(/^[\x21-\x7e]+$/);
}

describe("subject-token encoding", () => {
  it("decodes every encoded identifier back to itself, identifiers of up to 256 UTF-8 bytes", () => {
    const sizes: number[] = [];
    fc.assert(
      fc.property(identifier, (s) => {
        sizes.push(utf8Bytes(s));
        expect(decodeToken(encodeToken(s))).toBe(s);
      }),
      { numRuns: 2000 },
    );
    // The identifiers cover the range the contract allows, not just short ones.
    expect(Math.max(...sizes)).toBeGreaterThanOrEqual(250);
    expect(sizes.filter((n) => n > 128).length).toBeGreaterThanOrEqual(200);
  });

  it("gives back a leading byte-order mark, zero-width characters and either normalization form exactly", () => {
    for (const id of ["\uFEFFjob", "\uFEFF", "\uFEFF\uFEFFjob", "jo\u200Bb", "caf\u00E9", "cafe\u0301", "\u{1D400}x"]) {
      expect(decodeToken(encodeToken(id))).toBe(id);
    }
    expect(encodeToken("\uFEFFjob")).not.toBe(encodeToken("job"));
    expect(encodeToken("caf\u00E9")).not.toBe(encodeToken("cafe\u0301"));
  });

  it("encodes every identifier as one valid ASCII subject token", () => {
    fc.assert(
      fc.property(identifier, (s) => {
        expectValidToken(encodeToken(s));
      }),
      { numRuns: 2000 },
    );
  });

  it("encodes distinct identifiers as distinct tokens", () => {
    fc.assert(
      fc.property(identifier, identifier, (a, b) => {
        fc.pre(a !== b);
        expect(encodeToken(a)).not.toBe(encodeToken(b));
      }),
      { numRuns: 2000 },
    );
  });

  it("keeps names made of letters, digits, _ and - readable", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/), (s) => {
        expect(encodeToken(s)).toBe(s);
      }),
    );
  });

  it.each([
    [".", "~2E"],
    ["*", "~2A"],
    [">", "~3E"],
    [" ", "~20"],
    ["/", "~2F"],
    ["~", "~7E"],
    ["😀", "~F0~9F~98~80"],
    ["", EMPTY_TOKEN],
    ["orders.eu", "orders~2Eeu"],
    ["a b>c*", "a~20b~3Ec~2A"],
  ])("encodes %j as %j and back", (id, token) => {
    expect(encodeToken(id)).toBe(token);
    expectValidToken(token);
    expect(decodeToken(token)).toBe(id);
  });

  it("keeps the empty identifier apart from a literal ~", () => {
    expect(encodeToken("")).not.toBe(encodeToken("~"));
    expect(decodeToken(encodeToken("~"))).toBe("~");
  });

  it("encodes the largest identifiers (256 UTF-8 bytes of 4-byte characters)", () => {
    const id = "😀".repeat(64);
    expect(utf8Bytes(id)).toBe(256);
    const token = encodeToken(id);
    expectValidToken(token);
    expect(decodeToken(token)).toBe(id);
  });
});

describe("decodeToken", () => {
  it.each([
    ["", "empty", /^empty token$/],
    ["a.b", "a dot", /^invalid character at 1 in a\.b$/],
    ["a*", "a star", /^invalid character at 1 in a\*$/],
    [">", "a gt", /^invalid character at 0 in >$/],
    ["a b", "a space", /^invalid character at 1 in a b$/],
    ["é", "non-ASCII", /^invalid character at 0 in é$/],
    // The same with an escape in the token, which takes the escape-decoding path.
    ["~7Ea.b", "a dot after an escape", /^invalid character at 4 in ~7Ea\.b$/],
    ["a*~7E", "a star before an escape", /^invalid character at 1 in a\*~7E$/],
    ["~7E>", "a gt after an escape", /^invalid character at 3 in ~7E>$/],
    ["~7E é", "a space and non-ASCII after an escape", /^invalid character at 3 in ~7E é$/],
    ["~7Eé", "non-ASCII after an escape", /^invalid character at 3 in ~7Eé$/],
    ["a~", "a dangling ~", /^bad escape at 1 in a~$/],
    ["~2", "a short escape", /^bad escape at 0 in ~2$/],
    ["~~", "an escaped nothing", /^bad escape at 0 in ~~$/],
    ["~zz", "a non-hex escape", /^bad escape at 0 in ~zz$/],
    ["~2e", "lower-case hex", /^bad escape at 0 in ~2e$/],
    ["~41", "a needless escape of A", /^needless escape at 0 in ~41$/],
    ["x~5F", "a needless escape of _", /^needless escape at 1 in x~5F$/],
    ["~FF", "a byte that is not UTF-8", /^token ~FF is not UTF-8$/],
    ["~C0~AE", "an overlong UTF-8 sequence", /^token ~C0~AE is not UTF-8$/],
    ["~ED~A0~80", "an encoded lone surrogate", /^token ~ED~A0~80 is not UTF-8$/],
    ["~F0~9F", "a truncated UTF-8 sequence", /^token ~F0~9F is not UTF-8$/],
  ])("rejects %j (%s), saying where and why", (token, _what, message) => {
    let error: unknown;
    try {
      decodeToken(token);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidTokenError);
    expect((error as Error).name).toBe("InvalidTokenError");
    expect((error as Error).message).toMatch(message);
    // A UTF-8 refusal carries the decoder's own error as its cause.
    if (/UTF-8/.test((error as Error).message)) expect((error as Error).cause).toBeInstanceOf(TypeError);
  });

  it("decodes strictly from a fresh load of the module (its UTF-8 decoder is made once, at load)", async () => {
    vi.resetModules();
    const fresh = await import("../../src/contract/subjects.ts");
    expect(fresh.decodeToken("~C3~A9")).toBe("é");
    expect(() => fresh.decodeToken("~FF")).toThrow(/not UTF-8/);
  });

  it("accepts only canonical tokens: whatever it decodes re-encodes to the same token", () => {
    const tokenLike = fc.string({
      unit: fc.constantFrom("~", "2", "E", "7", "A", "F", "0", "9", "C", "8", "a", "-", "_", "x"),
      maxLength: 24,
    });
    fc.assert(
      fc.property(tokenLike, (token) => {
        let decoded: string;
        try {
          decoded = decodeToken(token);
        } catch (e) {
          expect(e).toBeInstanceOf(InvalidTokenError);
          return;
        }
        expect(encodeToken(decoded)).toBe(token);
      }),
      { numRuns: 3000 },
    );
  });
});
