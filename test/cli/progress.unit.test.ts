/**
 * Progress of long reads on a terminal: throttled, in place, cleared when the
 * read ends or other output needs the line; reported by wrapping the log the
 * tools read, so every message that passes is counted once.
 */
import { describe, expect, it } from "vitest";
import { ReadProgress, withProgress } from "../../src/cli/progress.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";

function sink() {
  const writes: string[] = [];
  return { writes, write: (t: string) => writes.push(t) };
}

describe("ReadProgress", () => {
  it("writes at most once per interval, in place, and clears the line at the end", () => {
    const out = sink();
    let t = 0;
    const progress = new ReadProgress("replay", 1000, out, () => t, 100);
    progress.seen(1);
    t = 50;
    progress.seen(2);
    t = 150;
    progress.seen(500);
    expect(out.writes).toEqual([
      "\rreplay: 1 messages read, at sequence 1 of 1000 (0%)\u001b[K",
      "\rreplay: 3 messages read, at sequence 500 of 1000 (50%), 20 events/s, ETA 25.0s\u001b[K",
    ]);
    progress.seen(1000);
    expect(out.writes.at(-1)).toBe("\r\u001b[K");
    progress.seen(1001);
    progress.done();
    expect(out.writes).toHaveLength(3);
  });

  it("clear() gives the line back to other output and the next update redraws it", () => {
    const out = sink();
    let t = 0;
    const progress = new ReadProgress("tail", 100, out, () => t, 100);
    progress.seen(1);
    progress.clear();
    progress.clear();
    t = 10;
    progress.seen(2);
    expect(out.writes).toEqual([
      "\rtail: 1 messages read, at sequence 1 of 100 (1%)\u001b[K",
      "\r\u001b[K",
      "\rtail: 2 messages read, at sequence 2 of 100 (2%), 200 events/s, ETA 490ms\u001b[K",
    ]);
  });

  it("never writes when the read ends before the first update is due and nothing was shown", () => {
    const out = sink();
    const progress = new ReadProgress("status", 10, out, () => 0, 100);
    progress.done();
    expect(out.writes).toEqual([]);
  });
});

describe("withProgress", () => {
  it("counts every message read through readStream and ends the line when the stream ends", async () => {
    const log = new MemoryEventLog();
    for (let i = 0; i < 5; i++)
      await log.append(`e.lock.${i}`, new TextEncoder().encode("{}"), { expectedLastSubjectSeq: 0, msgId: `m${i}` });
    const out = sink();
    let t = 0;
    const progress = new ReadProgress("replay", 10, out, () => (t += 100), 100);
    const seqs: number[] = [];
    for await (const m of withProgress(log, progress).readStream()) seqs.push(m.seq);
    expect(seqs).toEqual([1, 2, 3, 4, 5]);
    expect(out.writes.filter((w) => w.includes("messages read"))).toHaveLength(5);
    expect(out.writes.at(-1)).toBe("\r\u001b[K");
  });
});
