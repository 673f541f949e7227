import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { subjectMatcher } from "../../src/events/scan-plan.ts";

/** NATS's own rule, token by token: `*` one token, `>` one or more. */
function natsMatches(filter: string, subject: string): boolean {
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    if (f[i] === ">") return s.length > i;
    if (i >= s.length || (f[i] !== "*" && f[i] !== s[i])) return false;
  }
  return s.length === f.length;
}

describe("subjectMatcher", () => {
  it("keeps a kind's subjects and nothing else", () => {
    const keep = subjectMatcher("lh.events.lock.*");
    expect(keep("lh.events.lock.job")).toBe(true);
    expect(keep("lh.events.lock.")).toBe(false);
    expect(keep("lh.events.lock.a.b")).toBe(false);
    expect(keep("lh.events.locks.job")).toBe(false);
    expect(keep("lh.events.proxy.job")).toBe(false);
    expect(keep("lh.events.lock")).toBe(false);
  });

  it("agrees with NATS's matching over random filters and subjects", () => {
    const token = fc.constantFrom("a", "b", "lock", "events");
    const subject = fc.array(token, { minLength: 1, maxLength: 5 }).map((t) => t.join("."));
    const filter = fc
      .tuple(fc.array(fc.oneof(token, fc.constant("*")), { minLength: 1, maxLength: 4 }), fc.boolean())
      .map(([t, tail]) => (tail ? [...t, ">"] : t).join("."));
    fc.assert(fc.property(filter, subject, (f, s) => subjectMatcher(f)(s) === natsMatches(f, s)));
  });
});
