/**
 * The audit split over two workers by kind (src/tools/split-audit.ts)
 * reports what one auditor of the whole stream reports: the same violations
 * and progress, in the same order, and the same summary, on random
 * interleavings of a simulated history of every kind with the crafted rule
 * breaks (every rule, on every kind's subjects, envelopes naming another
 * kind, subjects of no kind), under random ranges and progress steps.
 */
import { beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { auditInWorker } from "../../src/tools/worker-read.ts";
import { auditSource, type AuditOptions, type AuditProgress, type AuditSummary, type Violation } from "../../src/tools/audit.ts";
import { auditLaneOf } from "../../src/tools/split-audit.ts";
import { logSource, type StreamSource } from "../../src/tools/stream-reader.ts";
import { CRAFT_AUDIT, scenarios } from "./support/violations.ts";
import { simulateWorkload } from "./support/workload.ts";

const SIMULATED = 9_000;
const subjects = new Subjects("split");

/** A message to append: its subject and bytes. */
type Raw = { readonly subject: string; readonly payload: Uint8Array };

let simulated: Raw[];
let crafted: Raw[];

beforeAll(async () => {
  const sim = await simulateWorkload({ events: SIMULATED, seed: 5 });
  const from = `${sim.subjects.prefix}.events.`;
  simulated = sim.log.messages
    .slice(0, SIMULATED)
    .map((m) => ({ subject: `${subjects.prefix}.events.${m.subject.slice(from.length)}`, payload: m.payload }));
  const encoder = new TextEncoder();
  const lockEvent = JSON.stringify({ type: "LockReleased", v: 1, at: "2026-05-01T00:00:00.000Z", kind: "lock", id: "x", data: {} });
  crafted = [
    ...scenarios("split").flatMap((s) => s.messages.map((m) => ({ subject: m.subject(subjects), payload: m.payload }))),
    // Subjects of no kind, on either side of the lanes' test of the kind's first letter.
    { subject: `${subjects.prefix}.events.rack.x`, payload: encoder.encode(lockEvent) },
    { subject: `${subjects.prefix}.events.lock`, payload: encoder.encode(lockEvent) },
    { subject: `${subjects.prefix}.other.lock.x`, payload: encoder.encode(lockEvent) },
    // A lock's event on a route's subject: found on the route's lane.
    { subject: subjects.event("route", "x"), payload: encoder.encode(lockEvent) },
  ];
}, 120_000);

/** `simulated` and `crafted` interleaved, each in its own order: the crafted messages at `places` (sorted) among the simulated. */
function interleave(places: readonly number[]): MemoryEventLog {
  const log = new MemoryEventLog();
  const sorted = [...places].sort((a, b) => a - b);
  let s = 0;
  for (const [c, place] of sorted.entries()) {
    for (; s < place; s++) log.appendRaw(simulated[s]!.subject, simulated[s]!.payload);
    log.appendRaw(crafted[c]!.subject, crafted[c]!.payload);
  }
  for (; s < simulated.length; s++) log.appendRaw(simulated[s]!.subject, simulated[s]!.payload);
  return log;
}

/** Everything an audit reports, in order, and its summary without the elapsed time. */
async function reportOf(
  run: (source: StreamSource, options: AuditOptions) => Promise<AuditSummary>,
  log: MemoryEventLog,
  options: Omit<AuditOptions, "onViolation" | "onProgress">,
) {
  const reported: (Violation | AuditProgress)[] = [];
  const summary = await run(logSource(log), {
    ...options,
    onViolation: (v) => reported.push(v),
    onProgress: (p) => reported.push(p),
  });
  return { reported, summary: { ...summary, elapsedMs: 0 } };
}

describe("the audit split over two workers", () => {
  it("sends every kind's subjects to one lane, locks with sessions and routes with hosts", () => {
    const laneOf = auditLaneOf(subjects);
    const lane = (subject: string) => laneOf({ seq: 1, subject, payload: new Uint8Array(), time: 0 });
    expect(lane(subjects.event("lock", "a"))).toBe(lane(subjects.event("session", "a")));
    expect(lane(subjects.event("route", "a"))).toBe(lane(subjects.event("host", "a")));
    expect(lane(subjects.event("lock", "a"))).not.toBe(lane(subjects.event("route", "a")));
    expect(lane("elsewhere.events.route.a")).toBe(0);
  });

  it("reports the same violations and progress, in the same order, and the same summary as one auditor", async () => {
    const total = SIMULATED + crafted.length;
    const half = Math.floor(total / 2);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: SIMULATED }), { minLength: crafted.length, maxLength: crafted.length }),
        fc.record({
          // From the first half on, to the last quarter or beyond: crafted breaks lie on either side of both.
          from: fc.option(
            fc.oneof(fc.record({ seq: fc.integer({ min: 1, max: half }) }), fc.record({ at: fc.integer({ min: 1, max: half }) })),
          ),
          toSeq: fc.option(fc.integer({ min: Math.ceil((3 * total) / 4), max: total + 10 })),
          progressEvery: fc.constantFrom(7, 1_000, 4_096),
        }),
        async (places, range) => {
          const log = interleave(places);
          const options: Omit<AuditOptions, "onViolation" | "onProgress"> = {
            ...CRAFT_AUDIT,
            progressEvery: range.progressEvery,
            fromSeq: range.from !== null && "seq" in range.from ? range.from.seq : undefined,
            fromTime: range.from !== null && "at" in range.from ? log.messages[range.from.at - 1]!.time : undefined,
            toSeq: range.toSeq ?? undefined,
          };
          const one = await reportOf((source, o) => auditSource(source, subjects, o), log, options);
          const split = await reportOf((source, o) => auditInWorker(source, subjects, o, undefined, { split: true }), log, options);
          const oneWorker = await reportOf((source, o) => auditInWorker(source, subjects, o, undefined, { split: false }), log, options);
          expect(one.summary.violations, JSON.stringify(range)).toBeGreaterThan(0);
          expect(split.reported).toEqual(one.reported);
          expect(split.summary).toEqual(one.summary);
          expect(oneWorker).toEqual(one);
          // The summary's text (what --json prints) too: the actors in one auditor's order.
          expect(JSON.stringify(split.summary)).toBe(JSON.stringify(one.summary));
        },
      ),
      // No shrinking: each run audits three times, and a shrink of thousands of places would take minutes.
      { numRuns: 6, endOnFailure: true },
    );
  }, 300_000);
});
