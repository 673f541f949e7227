/**
 * --since/--until for replay and audit on a hand-written history: bounds by
 * sequence and by time, replay's "changed since" narrowing, the audit's
 * reporting window, and an empty interval refused as a usage error; the
 * audit's progress reports on the tools' fast path (auditSource).
 */
import { describe, expect, it } from "vitest";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { auditSource } from "../../src/tools/audit.ts";
import { foldSource, replayView } from "../../src/tools/replay.ts";
import { logSource } from "../../src/tools/stream-reader.ts";
import { parseBounds } from "../../src/tools/time.ts";
import { ToolUsageError } from "../../src/tools/errors.ts";

const T0 = Date.parse("2026-06-01T00:00:00.000Z");

/** Three hosts set a second apart (sequences 1..3, stored at T0, T0+1s, T0+2s, or at the instants `stored`). */
function history(stored: readonly number[] = [T0, T0 + 1000, T0 + 2000]): { log: MemoryEventLog; subjects: Subjects } {
  let t = T0;
  const log = new MemoryEventLog({ now: () => t });
  const subjects = new Subjects("b");
  for (const [i, host] of ["h1", "h2", "h3"].entries()) {
    t = stored[i]!;
    const event = {
      type: "HostStateSet",
      v: 1,
      at: new Date(t).toISOString(),
      kind: "host",
      id: host,
      data: { healthy: true, draining: false },
    };
    log.appendRaw(subjects.event("host", host), new TextEncoder().encode(JSON.stringify(event)));
  }
  return { log, subjects };
}

describe("stream bounds", () => {
  it("parses sequences and instants, and refuses --since after --until", () => {
    expect(parseBounds("2", "2026-06-01T00:00:01Z")).toEqual({
      sinceSeq: 2,
      sinceTime: undefined,
      untilSeq: undefined,
      untilTime: T0 + 1000,
    });
    expect(() => parseBounds("5", "3")).toThrow(ToolUsageError);
    expect(() => parseBounds("5", "3", Date.now, ["--from", "--to"])).toThrow("--from 5 comes after --to 3: nothing lies between them");
    expect(() => parseBounds("2026-06-02T00:00:00Z", "2026-06-01T00:00:00Z")).toThrow(ToolUsageError);
  });

  it("replay folds up to --until (time or sequence) and shows only actors changed --since", async () => {
    const { log, subjects } = history();
    const byTime = await foldSource(logSource(log), subjects, { toTime: T0 + 1000 });
    expect(byTime.fold.seq).toBe(2);
    expect(byTime.changed).toBeUndefined();

    const since = await foldSource(logSource(log), subjects, { sinceTime: T0 + 1000 });
    expect(since.fold.seq).toBe(3);
    const view = replayView(since.fold, T0 + 5000, { changed: since.changed });
    expect(view.hosts?.map((h) => h.host)).toEqual(["h2", "h3"]);

    const window = await foldSource(logSource(log), subjects, { sinceSeq: 2, toSeq: 2 });
    expect(replayView(window.fold, T0 + 5000, { changed: window.changed }).hosts?.map((h) => h.host)).toEqual(["h2"]);
  });

  it("audit checks from --since to --until, folding what comes before silently", async () => {
    const { log, subjects } = history();
    const byTime = await auditSource(logSource(log), subjects, {
      cooldownMs: 1000,
      maxTtlMs: 60_000,
      fromTime: T0 + 1000,
      toTime: T0 + 1000,
    });
    expect(byTime).toMatchObject({ read: 2, checked: 1, firstSeq: 2, lastSeq: 2, violations: 0 });
    const bySeq = await auditSource(logSource(log), subjects, { cooldownMs: 1000, maxTtlMs: 60_000, fromSeq: 2 });
    expect(bySeq).toMatchObject({ read: 3, checked: 2, firstSeq: 2, lastSeq: 3 });
  });

  it("audit stops after --until's sequence, or at the first message stored after --until's instant", async () => {
    const { log, subjects } = history();
    const bySeq = await auditSource(logSource(log), subjects, { cooldownMs: 1000, maxTtlMs: 60_000, toSeq: 2 });
    expect(bySeq).toMatchObject({ read: 2, checked: 2, firstSeq: 1, lastSeq: 2 });

    // Stored at T0, T0+2s, then T0+1s (the clock set back): reading stops at sequence 2, the first stored after T0+1s.
    const setBack = history([T0, T0 + 2000, T0 + 1000]);
    const byTime = await auditSource(logSource(setBack.log), subjects, { cooldownMs: 1000, maxTtlMs: 60_000, toTime: T0 + 1000 });
    expect(byTime).toMatchObject({ read: 1, checked: 1, firstSeq: 1, lastSeq: 1 });
  });

  it("audit reports progress every progressEvery messages", async () => {
    const { log, subjects } = history();
    const progress: unknown[] = [];
    await auditSource(logSource(log), subjects, {
      cooldownMs: 1000,
      maxTtlMs: 60_000,
      progressEvery: 2,
      onProgress: (p) => progress.push(p),
    });
    expect(progress).toEqual([{ read: 2, seq: 2, violations: 0 }]);
  });
});
