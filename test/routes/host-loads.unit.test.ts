/**
 * The host load table (1.2): the latest load per host and when it arrived,
 * on an injected clock; a load older than the stale window is unknown; a
 * message that is not a JSON object with a finite `load >= 0` is ignored;
 * and the subject a load arrives on names its host.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/actors/clock.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { HostLoads, loadOfMessage } from "../../src/projections/host-loads.ts";

const encoder = new TextEncoder();
const msg = (text: string) => encoder.encode(text);

describe("host loads", () => {
  it("keeps each host's latest load, unknown once older than the stale window (exactly at its edge still known)", () => {
    const clock = new ManualClock();
    const loads = new HostLoads(15_000, clock);
    expect(loads.loadOf("h1")).toBeNull();
    expect(loads.report("h1", msg('{"load":3}'))).toBe(true);
    clock.advance(10_000);
    loads.report("h2", msg('{"load":0.25}'));
    loads.report("h1", msg('{"load":7}'));
    expect(Object.fromEntries(loads.known())).toEqual({ h1: 7, h2: 0.25 });
    clock.advance(15_000);
    expect(loads.loadOf("h1")).toBe(7);
    clock.advance(1);
    expect(loads.loadOf("h1")).toBeNull();
    expect(loads.known().size).toBe(0);
  });

  it("gives the same immutable map until a report arrives or a load goes stale", () => {
    const clock = new ManualClock();
    const loads = new HostLoads(1000, clock);
    loads.report("a", msg('{"load":1}'));
    clock.advance(500);
    loads.report("b", msg('{"load":2}'));
    const first = loads.known();
    clock.advance(400);
    expect(loads.known()).toBe(first);
    clock.advance(101);
    const later = loads.known();
    expect(later).not.toBe(first);
    expect(Object.fromEntries(later)).toEqual({ b: 2 });
    expect(Object.fromEntries(first)).toEqual({ a: 1, b: 2 });
    loads.report("b", msg('{"load":2}'));
    expect(loads.known()).not.toBe(later);
  });

  it("ignores anything but a JSON object with a finite load >= 0, and keeps the load it had", () => {
    for (const bad of [
      "",
      "3",
      "null",
      "[1]",
      '"load"',
      "{}",
      '{"load":-1}',
      '{"load":"3"}',
      '{"load":null}',
      '{"load":1e999}',
      '{"load":true}',
      "{load:1}",
      "\xff",
    ]) {
      expect(loadOfMessage(msg(bad)), bad).toBeUndefined();
    }
    expect(loadOfMessage(new Uint8Array([0x7b, 0xff, 0x7d]))).toBeUndefined();
    expect(loadOfMessage(msg('{"load":0}'))).toBe(0);
    expect(loadOfMessage(msg('{"load":12.5,"queue":4}'))).toBe(12.5);
    const loads = new HostLoads(1000, new ManualClock());
    loads.report("h", msg('{"load":4}'));
    expect(loads.report("h", msg('{"load":-4}'))).toBe(false);
    expect(loads.loadOf("h")).toBe(4);
  });

  it("reads the host from its load subject: one encoded token, or a name written as several tokens", () => {
    const s = new Subjects("lh.x");
    for (const host of ["h1", "gpu-7", "h.1", "é", "a~b", "with space"]) expect(s.hostOfLoad(s.load(host))).toBe(host);
    expect(s.load("h.1")).toBe("lh.x.loads.h~2E1");
    expect(s.hostOfLoad("lh.x.loads.h.1")).toBe("h.1");
    expect(s.hostOfLoad("lh.x.loads.gpu:1")).toBe("gpu:1");
    expect(s.hostOfLoad("lh.x.loads.")).toBeUndefined();
    expect(s.hostOfLoad("lh.x.events.host.h1")).toBeUndefined();
    expect(s.allLoads).toBe("lh.x.loads.>");
  });
});
