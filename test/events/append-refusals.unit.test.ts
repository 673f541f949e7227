/**
 * How the stream's refusals of an append are read: every form of "wrong last
 * sequence" nats-server sends (10071 with the sequence; 10164 and 10163 from a
 * replicated stream of 2.12 and later) is a conflict the writer settles by
 * reading again, never an UNAVAILABLE; any other API error is a definite failure.
 */
import { describe, expect, it } from "vitest";
import { AppendRefusedError, refusalOf } from "../../src/events/jetstream-event-log.ts";
import { LogUnavailableError, WrongLastSequenceError } from "../../src/events/event-log.ts";

describe("refusalOf", () => {
  it("reads 10071 as a conflict naming the subject's last sequence", () => {
    const e = refusalOf("p.events.lock.a", 3, { err_code: 10071, description: "wrong last sequence: 42" });
    expect(e).toBeInstanceOf(WrongLastSequenceError);
    expect((e as WrongLastSequenceError).actual).toBe(42);
  });

  it.each([
    [10164, "wrong last sequence"],
    [10163, "expected last sequence per subject temporarily unavailable"],
  ])("reads %i (a replicated stream's) as a conflict without a sequence", (code, description) => {
    const e = refusalOf("p.events.lock.a", 3, { err_code: code, description });
    expect(e).toBeInstanceOf(WrongLastSequenceError);
    expect((e as WrongLastSequenceError).actual).toBeUndefined();
  });

  it("reads any other API error as a definite failure carrying its code", () => {
    const e = refusalOf("p.events.lock.a", 3, { err_code: 10047, description: "insufficient resources" });
    expect(e).toBeInstanceOf(AppendRefusedError);
    expect(e).toBeInstanceOf(LogUnavailableError);
    expect((e as AppendRefusedError).errCode).toBe(10047);
    expect((e as LogUnavailableError).ambiguous).toBe(false);
    expect(e.message).toBe("append to p.events.lock.a failed: insufficient resources");
  });
});
