/**
 * The chaos run's short setting inside `npm test`: a single nats-server, two
 * instances, twelve clients for 12 s with an instance SIGKILLed and
 * restarted, nats-server SIGKILLed and restarted, and the other instance
 * SIGTERMed. Every check must hold (`npm run chaos` runs longer ones).
 */
import { describe, expect, it } from "vitest";
import { runChaos } from "./scenario.ts";

describe("chaos, short setting", () => {
  it("keeps every check through an instance kill, a nats-server kill and a SIGTERM", async () => {
    const report = await runChaos({ cluster: false, seed: 20261201, durationMs: 12_000, clients: 12 });
    const summary = `${report.requests} requests, ${report.faults.length} faults, longest unavailability ${report.longestUnavailableMs} ms; examples ${JSON.stringify(report.examples, null, 1)}`;
    console.log(`chaos short: ${summary}`);
    expect(report.requests).toBeGreaterThan(200);
    expect(report.violations, summary).toEqual(Object.fromEntries(Object.keys(report.violations).map((k) => [k, 0])));
  }, 90_000);
});
