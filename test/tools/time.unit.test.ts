/** The tools' instants, durations and positions, and the search for the first message at or after an instant. */
import { describe, expect, it } from "vitest";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import {
  firstSeqAtOrAfter,
  formatDuration,
  parseCount,
  parseDuration,
  parseInstant,
  parsePosition,
  parseSince,
} from "../../src/tools/time.ts";
import { ToolUsageError } from "../../src/tools/errors.ts";

describe("tool time parsing", () => {
  it.each([
    ["500ms", 500],
    ["30s", 30_000],
    ["10m", 600_000],
    ["2h", 7_200_000],
    ["1d", 86_400_000],
    ["1h30m", 5_400_000],
    ["1.5s", 1500],
  ])("duration %s is %i ms", (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(["", "10", "ten minutes", "5 m", "-5s", "1y"])("refuses the duration %j with a usage error", (text) => {
    expect(() => parseDuration(text, "--since")).toThrow(ToolUsageError);
  });

  it("reads RFC 3339 instants with any offset, and now; refuses the rest", () => {
    expect(parseInstant("2026-11-30T19:14:08.647Z")).toBe(Date.parse("2026-11-30T19:14:08.647Z"));
    expect(parseInstant("2026-11-30T20:14:08+01:00")).toBe(Date.parse("2026-11-30T19:14:08.000Z"));
    expect(parseInstant("now", "--at", () => 42)).toBe(42);
    for (const bad of ["2026-11-30", "2026-11-30 19:14:08Z", "yesterday", "2026-13-45T00:00:00Z", "1700000000000"]) {
      expect(() => parseInstant(bad, "--at")).toThrow(/--at: expected an RFC 3339 instant/);
    }
  });

  it("--since takes an instant or a duration ago", () => {
    const now = () => Date.parse("2026-11-30T12:00:00.000Z");
    expect(parseSince("10m", now)).toBe(Date.parse("2026-11-30T11:50:00.000Z"));
    expect(parseSince("2026-11-30T11:00:00Z", now)).toBe(Date.parse("2026-11-30T11:00:00.000Z"));
  });

  it("--from/--to: a whole number is a sequence, anything else an instant", () => {
    expect(parsePosition("42", "--from")).toEqual({ seq: 42 });
    expect(parsePosition("2026-11-30T11:00:00Z", "--from")).toEqual({ time: Date.parse("2026-11-30T11:00:00Z") });
    expect(() => parsePosition("-3", "--to")).toThrow(ToolUsageError);
    expect(() => parseCount("0", "--limit", 1)).toThrow(/--limit: expected a whole number >= 1/);
    expect(parseCount("7", "--seq")).toBe(7);
  });

  it("formats durations short", () => {
    expect([850, 12_345, 245_000, 7_620_000, 273_600_000, -6000].map(formatDuration)).toEqual([
      "850ms",
      "12.3s",
      "4m05s",
      "2h07m",
      "3d04h",
      "-6.0s",
    ]);
  });
});

describe("firstSeqAtOrAfter", () => {
  it("finds the first message stored at or after an instant", async () => {
    let t = 1000;
    const log = new MemoryEventLog({ now: () => t });
    const times = [1000, 1000, 1005, 1010, 1010, 1010, 1020, 1500, 1500, 2000];
    for (const time of times) {
      t = time;
      log.appendRaw("p.events.lock.a", new Uint8Array([123, 125]));
    }
    for (const probe of [0, 1000, 1001, 1005, 1006, 1010, 1011, 1499, 1500, 2000, 2001]) {
      const expected = times.findIndex((time) => time >= probe) + 1 || times.length + 1;
      expect(await firstSeqAtOrAfter(log, probe), `probe ${probe}`).toBe(expected);
    }
    expect(await firstSeqAtOrAfter(new MemoryEventLog(), 5)).toBe(1);
  });
});
