/**
 * What every kind of chaos run does at its end: stop its instances with
 * SIGTERM (each must exit 0 within 10 s), and turn the records, the stream
 * and the verdict into the report the runner prints and writes as JSON.
 */
import type { StoredMessage } from "../../src/events/event-log.ts";
import type { ChaosCheck, VerdictBuilder } from "./checks.ts";
import { availability, unservedBreakdown, type OpRecord, type Outage } from "./history.ts";
import type { ChaosReport, FaultRecord } from "./scenario.ts";
import type { ServeProcess } from "./serve-process.ts";

/** SIGTERMs every instance in turn, recording each exit as a fault and any unclean one as `sigterm-exit`. */
export async function terminateAll(instances: ServeProcess[], faults: FaultRecord[], t0: number, verdict: VerdictBuilder): Promise<void> {
  for (const p of instances.splice(0)) {
    const exit = await p.terminate(10_000);
    faults.push({ fault: "SIGTERM instance", target: p.name, atMs: Date.now() - exit.ms - t0, tookMs: exit.ms, exitCode: exit.code });
    if (exit.code !== 0 || exit.timedOut)
      verdict.add("sigterm-exit", `${p.name}: code ${exit.code}, ${exit.ms} ms\n${p.logTail.slice(-1500)}`);
  }
}

/** What a run's end knows. */
export interface RunOutcome {
  readonly settings: { readonly seed: number; readonly durationMs: number; readonly clients: number; readonly cluster: boolean };
  readonly records: readonly OpRecord[];
  readonly messages: readonly StoredMessage[];
  readonly outages: readonly Outage[];
  readonly faults: FaultRecord[];
  readonly verdict: VerdictBuilder;
  readonly t0: number;
  readonly loadEnd: number;
  /** Checks counted but not judged by this kind of run. */
  readonly notJudged?: readonly ChaosCheck[];
}

/** The report of a run: figures, faults and every check's count; passed when every judged check held. */
export function chaosReport(o: RunOutcome): ChaosReport {
  const figures = availability(o.records, o.outages, o.loadEnd);
  const result = o.verdict.build();
  const notJudged = o.notJudged ?? [];
  return {
    requests: figures.requests,
    faults: o.faults,
    violations: result.violations,
    seed: o.settings.seed,
    cluster: o.settings.cluster,
    durationMs: o.settings.durationMs,
    clients: o.settings.clients,
    attempts: figures.attempts,
    longestUnavailableMs: figures.longestUnavailableMs,
    unservedOutsideFaults: figures.unservedOutsideOutages,
    unservedBreakdown: unservedBreakdown(o.records, o.outages, o.t0),
    events: o.messages.length,
    undecidedLocks: result.undecidedLocks,
    lockOperations: result.lockOperations,
    examples: result.examples,
    passed: Object.entries(result.violations).every(([check, n]) => n === 0 || notJudged.includes(check as ChaosCheck)),
    ...(o.notJudged === undefined ? {} : { notJudged: o.notJudged }),
  };
}
