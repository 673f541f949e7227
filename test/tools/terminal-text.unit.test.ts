/**
 * What reaches an operator's terminal from a client's data: a lock owner, a
 * reply subject or a label holding ESC, a C1 CSI, a bidi override or a
 * zero-width character is shown escaped, never obeyed (red team: a durable
 * command's reply subject cleared `serve`'s terminal and set its title; a
 * holder's owner made `leasehold call` print "ok" over its refusal).
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { cell, visible, visibleJson } from "../../src/tools/table.ts";
import { textLine } from "../../src/cli/logging.ts";

const HOSTILE = "mallory\u001b]0;owned\u0007\u001b[2J\u009b8m\u202eevil\u200b";

/** No code point a terminal acts on or hides. */
const obeyable = /[\p{Cc}\p{Cf}\u2028\u2029]/u;

describe("text for a terminal", () => {
  it("escapes every control and format code point, and keeps the rest", () => {
    expect(visible(HOSTILE)).toBe("mallory\\u001b]0;owned\\u0007\\u001b[2J\\u009b8m\\u202eevil\\u200b");
    expect(visible("plain text, ünïcödé, 😀")).toBe("plain text, ünïcödé, 😀");
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (s) => {
        expect(obeyable.test(visible(s))).toBe(false);
      }),
    );
  });

  it("keeps JSON text, indented or not, the same JSON, with nothing a terminal obeys inside its strings", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: "binary" }), fc.constantFrom(undefined, 2), (value, key, space) => {
        const text = JSON.stringify({ [key]: value, owner: HOSTILE }, null, space);
        const shown = visibleJson(text);
        expect(JSON.parse(shown)).toEqual(JSON.parse(text));
        expect(shown.split("\n").every((line) => !obeyable.test(line.replace(/\r|\t/g, "")))).toBe(true);
      }),
    );
  });

  it("shows a log record's client-written fields escaped, the message and error too", () => {
    const line = textLine({ level: 40, msg: `refused ${HOSTILE}`, reply: HOSTILE, details: { owner: HOSTILE }, err: { message: HOSTILE } });
    expect(line).not.toMatch(obeyable);
    expect(line).toContain("reply=mallory\\u001b]0;owned");
    const withStack = textLine({ level: 50, msg: "x", err: { message: HOSTILE, stack: `Error: ${HOSTILE}\n    at f (x.js:1:1)` } }, true);
    expect(withStack.split("\n").every((l) => !obeyable.test(l))).toBe(true);
  });

  it("quotes a table cell holding a comma or an equals sign, which the tools join lists and pairs with", () => {
    expect(cell("x,y")).toBe('"x,y"');
    expect(cell("eu,tier=gold")).toBe('"eu,tier=gold"');
    expect(cell("plain-name_1.2")).toBe("plain-name_1.2");
  });
});
