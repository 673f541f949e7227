/**
 * Strict request bodies (1.2): a field its op does not define is refused
 * BAD_REQUEST with details `{field}`, naming the first such field in the
 * body's order, on every op; `requestId` (every op) and `waitMs`
 * (lock.acquire) are defined.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { parseRequest } from "../../src/transport/endpoint.ts";
import { firstUnknownField, topLevelKeys } from "../../src/transport/endpoint.ts";
import { REQUEST_SCHEMAS, validBodies, type KindOp } from "../support/op-bodies.ts";

const encoder = new TextEncoder();
const bytes = (text: string) => encoder.encode(text);
const parse = (op: KindOp, text: string) => parseRequest(REQUEST_SCHEMAS[op] as z.ZodType<unknown>, bytes(text));
const OPS = Object.keys(REQUEST_SCHEMAS) as KindOp[];

/** The body text of `fields` with `extra` spliced in at `at` (members as JSON text, in order; `space` around the punctuation). */
function withFieldsAt(fields: Record<string, unknown>, extra: readonly [string, unknown][], at: number, space = ""): string {
  const member = ([k, v]: [string, unknown]) => `${JSON.stringify(k)}${space}:${space}${JSON.stringify(v)}`;
  const members = Object.entries(fields).map(member);
  members.splice(at, 0, ...extra.map(member));
  return `${space}{${space}${members.join(`${space},${space}`)}${space}}${space}`;
}

describe("strict request bodies", () => {
  it.each(OPS)("%s takes its own fields and requestId, and refuses an unknown field by name", (op) => {
    const valid = { ...validBodies("t")[op], requestId: "q1" };
    expect(parse(op, JSON.stringify(valid)).ok).toBe(true);
    const refused = parse(op, JSON.stringify({ ...valid, ttlMS: 5000 }));
    expect(refused).toEqual({
      ok: false,
      rejection: { code: "BAD_REQUEST", message: expect.stringContaining('"ttlMS": unknown field'), details: { field: "ttlMS" } },
    });
  });

  it("refuses the misspelt ttlMS of the issue instead of giving the default TTL", () => {
    expect(parse("lock.acquire", '{"name":"db","owner":"me","ttlMS":5000}')).toMatchObject({
      ok: false,
      rejection: { code: "BAD_REQUEST", details: { field: "ttlMS" } },
    });
  });

  it("defines waitMs on lock.acquire only, as 1.1 does", () => {
    expect(parse("lock.acquire", '{"name":"db","owner":"me","waitMs":100}').ok).toBe(true);
    expect(parse("lock.renew", '{"name":"db","owner":"me","etag":"e","waitMs":100}')).toMatchObject({
      ok: false,
      rejection: { details: { field: "waitMs" } },
    });
  });

  it("defines session on lock.acquire (1.2 sessions), refusing it together with ttlMs, and nowhere else among the lock ops", () => {
    expect(parse("lock.acquire", '{"name":"db","owner":"me","session":"s","waitMs":10}').ok).toBe(true);
    expect(parse("lock.acquire", '{"name":"db","owner":"me","session":"s","ttlMs":10}')).toMatchObject({
      ok: false,
      rejection: { code: "BAD_REQUEST", message: expect.stringContaining("ttlMs: must not be given with session") },
    });
    expect(parse("lock.renew", '{"name":"db","owner":"me","etag":"e","session":"s"}')).toMatchObject({
      ok: false,
      rejection: { details: { field: "session" } },
    });
  });

  it("names an unknown field before any other fault of the body", () => {
    expect(parse("lock.acquire", '{"name":"","owner":7,"zzz":1}')).toMatchObject({ ok: false, rejection: { details: { field: "zzz" } } });
  });

  it("names the first unknown field in the body's order, wherever it stands and whatever its name", () => {
    const name = fc.oneof(
      fc.string({ minLength: 1, maxLength: 6 }),
      fc.constantFrom("0", "7", "42", "4294967294", "4294967295", "01", "-1", "1.5", "__proto__", "constructor", "toString"),
    );
    fc.assert(
      fc.property(
        fc.constantFrom(...OPS),
        fc.uniqueArray(name, { minLength: 1, maxLength: 4 }),
        fc.nat(),
        fc.boolean(),
        (op, names, at, spaced) => {
          const valid = validBodies("t")[op];
          const fieldsOfOp = Object.keys(valid);
          const unknown = names.filter((n) => !fieldsOfOp.includes(n) && n !== "requestId" && !(op === "lock.acquire" && n === "waitMs"));
          fc.pre(unknown.length > 0);
          const text = withFieldsAt(
            valid,
            names.map((n) => [n, 1]),
            at % (fieldsOfOp.length + 1),
            spaced ? " \n\t" : "",
          );
          const refused = parse(op, text);
          expect(refused).toMatchObject({ ok: false, rejection: { code: "BAD_REQUEST", details: { field: unknown[0] } } });
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("reads a body's keys in written order, nesting, escapes and duplicates included", () => {
    const text = ' { "b" : {"x":[1,{"y":"}"}]}, "a\\"q":"\\\\", "9":null , "b":[],"1":{}} ';
    expect([...topLevelKeys(text)]).toEqual(["b", 'a"q', "9", "b", "1"]);
    expect(firstUnknownField(JSON.parse(text) as Record<string, unknown>, new Set(["b"]), bytes(text))).toBe('a"q');
    expect([...topLevelKeys("{}")]).toEqual([]);
  });

  it("refuses an unknown field after a known list tail too (route.acquire's fast path for long candidate lists)", () => {
    const fleet = Array.from({ length: 40 }, (_, i) => `h${i}`);
    const tail = `,"candidates":${JSON.stringify(fleet)}}`;
    for (let i = 0; i < 70; i++) expect(parse("route.acquire", `{"route":"r","fp":"c${i}","model":"m"${tail}`).ok).toBe(true);
    expect(parse("route.acquire", `{"route":"r","fp":"c","model":"m","modle":"x"${tail}`)).toMatchObject({
      ok: false,
      rejection: { details: { field: "modle" } },
    });
    expect(parse("route.acquire", `{"route":"r","fp":"c","model":"m","__proto__":{}${tail}`)).toMatchObject({
      ok: false,
      rejection: { details: { field: "__proto__" } },
    });
  });

  it("quotes a long unknown field shortly in the message and whole in the details", () => {
    const field = "f".repeat(1000);
    const refused = parse("proxy.list", JSON.stringify({ [field]: 1 }));
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.rejection.details).toEqual({ field });
    expect(refused.rejection.message.length).toBeLessThan(200);
    expect(refused.rejection.message).toContain("this op takes requestId");
  });
});
