/**
 * What both NATS-restart drills must show (issue 9): every instance answers
 * again after NATS is back, nothing is left unanswered once the recovery
 * allowance has passed, and both exit 0 within 10 s of SIGTERM.
 */
import { expect } from "vitest";
import { describeDrill, runRestartDrill, type DrillSettings } from "./drill.ts";

/** Runs a drill with 16 clients, 2 s per attempt and a 5 s recovery allowance, and asserts every promise of the drill. */
export async function expectDrillKeepsItsPromises(label: string, settings: Pick<DrillSettings, "nodes" | "seed">): Promise<void> {
  const attemptMs = 2000;
  const recoveryMs = 5000;
  const report = await runRestartDrill({ ...settings, clients: 16, attemptMs, recoveryMs });
  const summary = describeDrill(report);
  console.log(`${label}: ${summary}`);
  expect(report.availability.requests, summary).toBeGreaterThan(100);
  for (const exit of report.exits) {
    expect({ instance: exit.name, code: exit.code, timedOut: exit.timedOut }, `${summary}\n${report.logs[exit.name]}`).toEqual({
      instance: exit.name,
      code: 0,
      timedOut: false,
    });
    expect(exit.ms).toBeLessThanOrEqual(10_000);
  }
  for (const [name, ms] of Object.entries(report.pingBackMs)) expect({ name, ms }, summary).toEqual({ name, ms: expect.any(Number) });
  // Once the recovery allowance has passed, every attempt is answered within its deadline by whichever instance gets it.
  expect(report.unservedAfterRecovery, summary).toBe(0);
  // An operation open when NATS returned (or started after) has its answer within the allowance plus one attempt
  // (one that gave up on its own deadline before that counts until it gave up).
  expect(report.longestWaitAfterBackMs, summary).toBeLessThanOrEqual(recoveryMs + attemptMs);
}
