/**
 * The audit on hand-built histories (test/tools/support/violations.ts), on the
 * in-memory log: each rule is found at exactly the messages that break it,
 * named, given its sequence and actor, and nothing else is reported. The
 * same histories go through JetStream in audit.int.test.ts.
 */
import { describe, expect, it } from "vitest";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { type StoredMessage } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { AUDIT_RULES, auditStream, type AuditOptions, type Violation } from "../../src/tools/audit.ts";
import { CRAFT_AUDIT, CRAFT_T0, scenarios, type Scenario } from "./support/violations.ts";

const subjects = new Subjects("craft");

/** Writes the scenario into a fresh in-memory log, bypassing every check. */
function write(scenario: Scenario): MemoryEventLog {
  let t = CRAFT_T0;
  const log = new MemoryEventLog({ now: () => t++ });
  for (const m of scenario.messages) log.appendRaw(m.subject(subjects), m.payload);
  return log;
}

async function audit(
  messages: AsyncIterable<StoredMessage>,
  options: Partial<AuditOptions> = {},
): Promise<{ violations: Violation[]; summary: Awaited<ReturnType<typeof auditStream>> }> {
  const violations: Violation[] = [];
  const summary = await auditStream(messages, subjects, { ...CRAFT_AUDIT, ...options, onViolation: (v) => violations.push(v) });
  return { violations, summary };
}

describe("audit rules on crafted histories", () => {
  it.each(scenarios().map((s) => [s.rule, s] as const))("%s: found at exactly the breaking messages", async (_rule, scenario) => {
    const { violations, summary } = await audit(write(scenario).readStream());
    expect(violations.map((v) => [v.seq, v.rule])).toEqual(scenario.breaks.map((i) => [i + 1, scenario.rule]));
    expect(summary.violations).toBe(scenario.breaks.length);
    expect(summary.byRule).toEqual({ [scenario.rule]: scenario.breaks.length });
    expect(summary.read).toBe(scenario.messages.length);
    for (const v of violations) {
      expect(v.subject).toBe(scenario.messages[v.seq - 1]!.subject(subjects));
      expect(v.message.length).toBeGreaterThan(10);
    }
  });

  it("has a crafted history for every rule but subject-sequence (JetStream cannot store that one; see below)", () => {
    const covered = new Set(scenarios().map((s) => s.rule));
    const missing = Object.keys(AUDIT_RULES).filter((r) => !covered.has(r as keyof typeof AUDIT_RULES));
    expect(missing).toEqual(["subject-sequence"]);
  });

  it("names the actor of each violation, decoding its subject token", async () => {
    const [lockTwoHolders] = scenarios("names with spaces.and dots").filter((s) => s.rule === "lock-two-holders");
    const { violations } = await audit(write(lockTwoHolders!).readStream());
    expect(violations).toHaveLength(1);
    expect(violations[0]!.actor).toEqual({ kind: "lock", id: expect.stringMatching(/^names with spaces\.and dots\.\d+\/lock$/) as string });
    expect(violations[0]!.at).toBe("2026-05-01T00:00:05.000Z");
  });

  it("subject-sequence: a sequence that does not rise along its subject", async () => {
    const [s] = scenarios().filter((x) => x.rule === "lock-two-holders");
    const ok = s!.messages.map((m, i): StoredMessage => ({
      seq: [5, 3, 9][i]!,
      subject: m.subject(subjects),
      payload: m.payload,
      time: CRAFT_T0 + i,
    }));
    const stream: AsyncIterable<StoredMessage> = {
      [Symbol.asyncIterator]: () => {
        const it = ok[Symbol.iterator]();
        return { next: () => Promise.resolve(it.next()) };
      },
    };
    const { violations } = await audit(stream);
    expect(violations.map((v) => [v.seq, v.rule])).toEqual([
      [3, "subject-sequence"],
      [3, "lock-two-holders"],
    ]);
  });

  it("--from reports only from there on, yet folds what came before (a renewal of an earlier lease is no violation)", async () => {
    const [renew] = scenarios().filter((x) => x.rule === "lock-renew-not-holder");
    const log = write(renew!);
    // Breaks at positions 2, 3, 5 (sequences 3, 4, 6); from sequence 4 on, only 4 and 6 count.
    const fromSeq = await audit(log.readStream(), { fromSeq: 4 });
    expect(fromSeq.violations.map((v) => v.seq)).toEqual([4, 6]);
    expect(fromSeq.summary).toMatchObject({ read: 6, checked: 3, firstSeq: 4, lastSeq: 6 });
    // From the stored time of sequence 5 (times are T0, T0+1, ...).
    const fromTime = await audit(log.readStream(), { fromTime: CRAFT_T0 + 4 });
    expect(fromTime.violations.map((v) => v.seq)).toEqual([6]);
  });

  it("--to stops reading after a sequence or an instant", async () => {
    const [renew] = scenarios().filter((x) => x.rule === "lock-renew-not-holder");
    const log = write(renew!);
    expect((await audit(log.readStream(), { toSeq: 3 })).violations.map((v) => v.seq)).toEqual([3]);
    const toTime = await audit(log.readStream(), { toTime: CRAFT_T0 + 3 });
    expect(toTime.violations.map((v) => v.seq)).toEqual([3, 4]);
    expect(toTime.summary.read).toBe(4);
  });

  it("reports progress every N messages", async () => {
    const all = scenarios();
    let t = CRAFT_T0;
    const log = new MemoryEventLog({ now: () => t++ });
    for (const s of all) for (const m of s.messages) log.appendRaw(m.subject(subjects), m.payload);
    const progress: number[] = [];
    const { summary } = await audit(log.readStream(), { progressEvery: 10, onProgress: (p) => progress.push(p.read) });
    expect(progress).toEqual(Array.from({ length: Math.floor(summary.read / 10) }, (_, i) => (i + 1) * 10));
    // All scenarios in one stream: their names are apart, so each still breaks only its own rule.
    expect(summary.violations).toBe(all.reduce((n, s) => n + s.breaks.length, 0));
  });
});
