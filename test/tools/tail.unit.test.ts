/** tail's lines and filters, and following an in-memory log from an instant. */
import { describe, expect, it } from "vitest";
import { encodeEvent } from "../../src/events/envelope.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { type StoredMessage } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { formatEventJson, formatEventLine, startTail, tailFilter } from "../../src/tools/tail.ts";
import { ToolUsageError } from "../../src/tools/errors.ts";

const subjects = new Subjects("leasehold");
const encoder = new TextEncoder();

function stored(
  seq: number,
  kind: "lock" | "route",
  id: string,
  type: string,
  data: Record<string, unknown>,
  requestId?: string,
): StoredMessage {
  const event = { type, v: 1 as const, at: "2026-11-30T19:14:08.647Z", kind, id, ...(requestId === undefined ? {} : { requestId }), data };
  return { seq, subject: subjects.event(kind, id), payload: encodeEvent(event), time: Date.parse(event.at) + 2 };
}

describe("tail lines", () => {
  it("one readable line per event: instant, sequence, actor, type, data fields, requestId", () => {
    const m = stored(
      42,
      "lock",
      "reports/nightly",
      "LockAcquired",
      { owner: "worker-a", generation: 1, ttlMs: 15000, expiresAt: "2026-11-30T19:14:23.647Z", previousOwner: "" },
      "r-17",
    );
    expect(formatEventLine(m, subjects)).toBe(
      '2026-11-30T19:14:08.647Z #42 lock reports/nightly LockAcquired owner=worker-a generation=1 ttlMs=15000 expiresAt=2026-11-30T19:14:23.647Z previousOwner="" requestId=r-17',
    );
  });

  it("quotes names and values with spaces, and writes arrays as JSON", () => {
    const m = stored(7, "route", "my route", "RouteReleased", { released: [{ fp: "a", model: "m", host: "h 1" }], seen: ["h 1"] });
    expect(formatEventLine(m, subjects)).toBe(
      '2026-11-30T19:14:08.647Z #7 route "my route" RouteReleased released=[{"fp":"a","model":"m","host":"h 1"}] seen=["h 1"]',
    );
  });

  it("says UNPARSABLE, with the stored time, for a message that is not an event", () => {
    const m: StoredMessage = {
      seq: 9,
      subject: subjects.event("lock", "x"),
      payload: encoder.encode("{oops"),
      time: Date.parse("2026-11-30T19:00:00.000Z"),
    };
    expect(formatEventLine(m, subjects)).toMatch(/^2026-11-30T19:00:00\.000Z #9 lock x UNPARSABLE not JSON: /);
    expect(JSON.parse(formatEventJson(m))).toEqual({
      seq: 9,
      subject: "leasehold.events.lock.x",
      storedAt: "2026-11-30T19:00:00.000Z",
      unparsable: expect.stringMatching(/^not JSON/) as string,
      payload: "{oops",
    });
  });

  it("--json: sequence, subject, stored time and the event as stored", () => {
    const m = stored(3, "lock", "db", "LockReleased", { owner: "w", generation: 2 });
    expect(JSON.parse(formatEventJson(m))).toEqual({
      seq: 3,
      subject: "leasehold.events.lock.db",
      storedAt: "2026-11-30T19:14:08.649Z",
      event: { type: "LockReleased", v: 1, at: "2026-11-30T19:14:08.647Z", kind: "lock", id: "db", data: { owner: "w", generation: 2 } },
    });
  });

  it("filters: everything, one kind, one actor (which needs a kind)", () => {
    expect(tailFilter(subjects)).toBe("leasehold.events.>");
    expect(tailFilter(subjects, "route")).toBe("leasehold.events.route.*");
    expect(tailFilter(subjects, "lock", "reports/nightly")).toBe("leasehold.events.lock.reports~2Fnightly");
    expect(() => tailFilter(subjects, undefined, "x")).toThrow(ToolUsageError);
  });

  it("follows from an instant, then live, narrowed to one actor", async () => {
    let t = 1000;
    const log = new MemoryEventLog({ now: () => t });
    const put = (kind: "lock" | "route", id: string) => {
      const m = stored(0, kind, id, kind === "lock" ? "LockReset" : "RouteUnpinned", kind === "lock" ? { generation: 0 } : {});
      return log.appendRaw(m.subject, m.payload);
    };
    put("lock", "a");
    t = 2000;
    put("lock", "b");
    put("lock", "a");
    const lines: string[] = [];
    const tail = await startTail(log, subjects, { kind: "lock", id: "a", since: 1500 }, (l) => lines.push(l));
    expect(tail).toMatchObject({ fromSeq: 2, filter: "leasehold.events.lock.a" });
    put("route", "a");
    put("lock", "a");
    await tail.stop();
    put("lock", "a");
    expect(lines.map((l) => l.split(" ").slice(1, 4).join(" "))).toEqual(["#3 lock a", "#5 lock a"]);
  });
});
