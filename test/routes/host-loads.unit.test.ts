/**
 * The host load table (1.2): the latest load per host and when it arrived,
 * on an injected clock; a load older than the stale window is unknown; a
 * message that is not a JSON object with a finite `load >= 0` is ignored;
 * the subject a load arrives on names its host; and loads of hosts without a
 * host record are kept for a bounded number of hosts, oldest report dropped
 * first.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/actors/clock.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { HostLoads, loadOfMessage } from "../../src/host/loads.ts";

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

  it("keeps the loads of at most maxUnknown hosts without a record, dropping the one that reported longest ago", () => {
    const clock = new ManualClock();
    const records = new Set(["set-up"]);
    const loads = new HostLoads(60_000, clock, { maxUnknown: 3 });
    loads.recogniseHosts((host) => records.has(host));
    loads.report("set-up", msg('{"load":9}'));
    for (const host of ["u1", "u2", "u3"]) {
      clock.advance(1);
      loads.report(host, msg('{"load":1}'));
    }
    // u1 reports again: u2 is now the oldest unknown host.
    loads.report("u1", msg('{"load":2}'));
    loads.report("u4", msg('{"load":4}'));
    expect(Object.fromEntries(loads.known())).toEqual({ "set-up": 9, u1: 2, u3: 1, u4: 4 });
    // Hosts with a record are not counted, however many unknown ones flood in.
    for (let i = 0; i < 1000; i++) loads.report(`flood-${i}`, msg('{"load":1}'));
    expect(loads.size).toBe(4);
    expect(loads.loadOf("set-up")).toBe(9);
    expect([...loads.known().keys()].sort()).toEqual(["flood-997", "flood-998", "flood-999", "set-up"]);
  });

  it("keeps the load of a host set up after it reported when its unknown place is dropped", () => {
    const clock = new ManualClock();
    const records = new Set<string>();
    const loads = new HostLoads(60_000, clock, { maxUnknown: 1 });
    loads.recogniseHosts((host) => records.has(host));
    loads.report("late", msg('{"load":5}'));
    records.add("late");
    loads.report("other", msg('{"load":1}'));
    expect(Object.fromEntries(loads.known())).toEqual({ late: 5, other: 1 });
    loads.report("another", msg('{"load":1}'));
    expect(Object.fromEntries(loads.known())).toEqual({ late: 5, another: 1 });
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
