/**
 * What the audit reports, beyond which rule broke where (audit-rules.unit.test.ts):
 * the words of each violation (an operator reads them to find the cause, so a
 * changed or lost detail is a regression; kept in a snapshot file reviewed
 * with each change), the summary's counts, its rules in a stable order, its
 * elapsed time on the clock, and progress every 10,000 messages by default.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { auditStream, type Violation } from "../../src/tools/audit.ts";
import { CRAFT_AUDIT, CRAFT_T0, scenarios } from "./support/violations.ts";

const subjects = new Subjects("craft");

/** Every scenario in one in-memory stream (their names are apart). */
function allScenarios(): MemoryEventLog {
  let t = CRAFT_T0;
  const log = new MemoryEventLog({ now: () => t++ });
  for (const s of scenarios()) for (const m of s.messages) log.appendRaw(m.subject(subjects), m.payload);
  return log;
}

afterEach(() => {
  vi.useRealTimers();
});

describe("audit report", () => {
  it("words each violation as before: rule, sequence, actor, instant and message", async () => {
    const violations: Violation[] = [];
    await auditStream(allScenarios().readStream(), subjects, { ...CRAFT_AUDIT, onViolation: (v) => violations.push(v) });
    expect(violations.length).toBeGreaterThan(20);
    expect(
      violations.map((v) => `${v.rule} #${v.seq} ${v.actor?.kind ?? "-"}/${v.actor?.id ?? "-"} ${v.at}: ${v.message}`),
    ).toMatchSnapshot();
  });

  it("sums up the actors by kind, the rules in code-unit order, and the time taken on the clock", async () => {
    vi.useFakeTimers({ now: CRAFT_T0, toFake: ["Date"] });
    const log = allScenarios();
    const stream = log.readStream();
    // The clock moves 1,234 ms while the stream is read.
    const ticking = {
      async *[Symbol.asyncIterator]() {
        for await (const m of stream) {
          yield m;
          if (m.seq === 1) vi.setSystemTime(CRAFT_T0 + 1234);
        }
      },
    };
    const summary = await auditStream(ticking, subjects, CRAFT_AUDIT);
    expect(summary.elapsedMs).toBe(1234);
    const rules = Object.keys(summary.byRule);
    expect(rules).toEqual([...rules].sort());
    expect(rules.length).toBeGreaterThan(20);
    const ids = {
      lock: new Set<string>(),
      proxy: new Set<string>(),
      route: new Set<string>(),
      host: new Set<string>(),
      session: new Set<string>(),
    };
    for (const m of log.messages) {
      const [kind, token] = m.subject.split(".").slice(2) as [keyof typeof ids, string];
      if (kind in ids) ids[kind].add(token);
    }
    expect(summary.actors).toEqual({
      lock: ids.lock.size,
      proxy: ids.proxy.size,
      route: ids.route.size,
      host: ids.host.size,
      session: ids.session.size,
    });
    expect(summary.actors.lock).toBeGreaterThan(0);
    expect(summary.actors.proxy).toBeGreaterThan(0);
    expect(summary.actors.route).toBeGreaterThan(0);
    expect(summary.actors.host).toBeGreaterThan(0);
  });

  it("reports progress every 10,000 messages unless told otherwise", async () => {
    let t = CRAFT_T0;
    const log = new MemoryEventLog({ now: () => t++ });
    const [first] = scenarios();
    for (let i = 0; i < 10_001; i++) log.appendRaw(first!.messages[0]!.subject(subjects), first!.messages[0]!.payload);
    const progress: number[] = [];
    await auditStream(log.readStream(), subjects, { ...CRAFT_AUDIT, onProgress: (p) => progress.push(p.read) });
    expect(progress).toEqual([10_000]);
  });
});
