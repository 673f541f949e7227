import { describe, expect, it } from "vitest";
import { LogUnavailableError, WrongLastSequenceError } from "../../src/events/event-log.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { eventLogContract } from "../support/contract-event-log.ts";

eventLogContract("MemoryEventLog", () =>
  Promise.resolve({ log: new MemoryEventLog(), subjectPrefix: "t.events", cleanup: () => Promise.resolve() }),
);

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

describe("MemoryEventLog beyond the contract", () => {
  it("forgets message ids after the dedup window of its clock", async () => {
    let now = 1_000_000;
    const log = new MemoryEventLog({ now: () => now, dedupWindowMs: 1000 });
    const first = await log.append("s.a", bytes("1"), { expectedLastSubjectSeq: 0, msgId: "m" });
    now += 999;
    expect(await log.append("s.a", bytes("1"), { expectedLastSubjectSeq: 0, msgId: "m" })).toEqual({ seq: first.seq, duplicate: true });
    now += 1;
    expect(await log.append("s.a", bytes("1"), { expectedLastSubjectSeq: first.seq, msgId: "m" })).toEqual({ seq: 2, duplicate: false });
  });

  it("stores on timeout-after-store but reports an ambiguous failure", async () => {
    const log = new MemoryEventLog();
    log.injectFaults("timeout-after-store");
    const error: unknown = await log.append("s.a", bytes("1"), { expectedLastSubjectSeq: 0, msgId: "m" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LogUnavailableError);
    expect((error as LogUnavailableError).ambiguous).toBe(true);
    expect(await log.lastSeq()).toBe(1);
    expect(await log.append("s.a", bytes("1"), { expectedLastSubjectSeq: 0, msgId: "m" })).toEqual({ seq: 1, duplicate: true });
  });

  it("stores nothing on timeout-before-store and reports an ambiguous failure", async () => {
    const log = new MemoryEventLog();
    log.injectFaults("timeout-before-store");
    const error: unknown = await log.append("s.a", bytes("1"), { expectedLastSubjectSeq: 0, msgId: "m" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LogUnavailableError);
    expect((error as LogUnavailableError).ambiguous).toBe(true);
    expect(await log.lastSeq()).toBe(0);
    expect(await log.append("s.a", bytes("1"), { expectedLastSubjectSeq: 0, msgId: "m" })).toEqual({ seq: 1, duplicate: false });
  });

  it("appendRaw bypasses every check but still moves the subject's sequence", async () => {
    const log = new MemoryEventLog();
    await log.append("s.a", bytes("1"), { expectedLastSubjectSeq: 0, msgId: "m" });
    const raw = log.appendRaw("s.a", bytes("not json"));
    expect(raw).toBe(2);
    expect(await log.lastSubjectSeq("s.a")).toBe(2);
    await expect(log.append("s.a", bytes("3"), { expectedLastSubjectSeq: 1, msgId: "n" })).rejects.toBeInstanceOf(WrongLastSequenceError);
  });
});
