/**
 * Deterministic simulation of the proxy runtime (selector, proxy actors,
 * read model) with faults, crashes and duplicate deliveries: every run keeps
 * the audit's rules (no proxy over its cap, no grant in cooldown), one event
 * per requestId, every acknowledged grant present once, a repeated
 * acquisition answered with the same lease, and no cap exceeded as the
 * clients' own replies show it.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, it, vi } from "vitest";
import { simulate, scenarioArb } from "./support/simulation.ts";
import { SimFigures, SIM_RUNS, SIM_TIMEOUT_MS, simParameters } from "./support/settings.ts";
import { useSimTimers } from "./support/sim-cluster.ts";
import { proxyPlanArb, proxySetup, proxyWorkload } from "./support/workloads.ts";

describe("simulation: proxies", () => {
  beforeAll(useSimTimers);
  afterAll(() => vi.useRealTimers());

  it(
    `keeps every proxy check over ${SIM_RUNS} schedules with faults, crashes and duplicate deliveries`,
    async () => {
      const figures = new SimFigures();
      await fc.assert(
        fc.asyncProperty(fc.scheduler(), scenarioArb(), proxyPlanArb, async (s, scenario, plan) => {
          const outcome = await simulate(s, "proxy", scenario, proxySetup(plan), proxyWorkload(plan));
          figures.add(outcome);
          if (outcome.problems.length > 0) throw new Error(outcome.problems.join("\n"));
        }),
        simParameters(),
      );
      console.log(figures.summary("proxy"));
    },
    SIM_TIMEOUT_MS,
  );
});
