/**
 * Replay on small hand-written histories: --seq stops at a sequence and shows
 * the state as of that message's time, --kind and --id narrow, and the tables
 * show lease state and time left as of the replay instant. (Replay against a
 * service's recorded answers: replay-workload.sim.test.ts and replay.int.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { foldStream, replayInstant, replayView } from "../../src/tools/replay.ts";
import { renderReplay } from "../../src/tools/replay-render.ts";

describe("replay", () => {
  it("--seq stops at a sequence and shows the state as of that message's time; --kind and --id narrow", async () => {
    let t = Date.parse("2026-06-01T00:00:00.000Z");
    const log = new MemoryEventLog({ now: () => t });
    const subjects = new Subjects("r");
    const put = (kind: "lock" | "host", id: string, type: string, data: Record<string, unknown>) =>
      log.appendRaw(
        subjects.event(kind, id),
        new TextEncoder().encode(JSON.stringify({ type, v: 1, at: new Date(t).toISOString(), kind, id, data })),
      );
    put("lock", "a", "LockAcquired", {
      owner: "w1",
      generation: 1,
      ttlMs: 5000,
      expiresAt: new Date(t + 5000).toISOString(),
      previousOwner: "",
    });
    t += 1000;
    put("host", "h1", "HostStateSet", { healthy: true, draining: false });
    t += 10_000;
    put("lock", "b", "LockAcquired", {
      owner: "w2",
      generation: 1,
      ttlMs: 5000,
      expiresAt: new Date(t + 5000).toISOString(),
      previousOwner: "",
    });

    const atSeq2 = await foldStream(log.readStream(), subjects, { toSeq: 2 });
    const view = replayView(atSeq2, replayInstant(atSeq2, { toSeq: 2 }, Date.now()));
    expect(view).toMatchObject({ seq: 2, messages: 2, at: "2026-06-01T00:00:01.000Z" });
    expect(view.locks).toEqual([
      {
        name: "a",
        state: "held",
        lease: expect.objectContaining({ owner: "w1", generation: 1 }) as unknown,
        recorded: expect.anything() as unknown,
        generation: 1,
        corrupt: null,
        waiters: 0,
      },
    ]);
    expect(view.hosts).toEqual([{ host: "h1", healthy: true, draining: false, maxLeases: null, active: 0 }]);

    const all = await foldStream(log.readStream(), subjects);
    const narrowed = replayView(all, replayInstant(all, {}, t), { kind: "lock", id: "a" });
    expect(Object.keys(narrowed).sort()).toEqual(["at", "locks", "messages", "seq"]);
    expect(narrowed.locks).toEqual([expect.objectContaining({ name: "a", state: "expired", lease: null })]);

    const lines = renderReplay(replayView(all, t), "R_EVENTS").join("\n");
    expect(lines).toContain("state of R_EVENTS at 2026-06-01T00:00:11.000Z (through sequence 3, 3 messages folded)");
    expect(lines).toMatch(
      /LOCKS \(2\)\n\s+LOCK\s+STATE\s+OWNER\s+GENERATION\s+ETAG\s+EXPIRES\s+LEFT\s+WAITERS\n\s+a\s+expired\s+w1\s+1\s+00000001\s+2026-06-01T00:00:05.000Z\s+-6.0s\s+0\n\s+b\s+held\s+w2\s+1\s+00000003\s+2026-06-01T00:00:16.000Z\s+5.0s\s+0/,
    );
  });
});
