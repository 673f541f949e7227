/**
 * Issue 9, "Must show": the node leading the event stream (replicas 3) of a
 * three-node cluster SIGKILLed and restarted on the same port
 * and store under a mixed load with two `leasehold serve` processes; then
 * both get SIGTERM.
 */
import { describe, expect, it } from "vitest";
import { describeDrill, runRestartDrill } from "./drill.ts";

describe("nats-server SIGKILLed and restarted under load (three-node cluster, the event stream's leader node)", () => {
  it("both instances answer within 5 s of NATS being back, no request waits past its deadline, both exit 0 within 10 s of SIGTERM", async () => {
    const attemptMs = 2000;
    const recoveryMs = 5000;
    const report = await runRestartDrill({ nodes: 3, clients: 16, attemptMs, recoveryMs, seed: 10 });
    const summary = describeDrill(report);
    console.log(`cluster leader restart drill: ${summary}`);
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
  }, 60_000);
});
