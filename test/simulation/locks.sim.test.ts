/**
 * Deterministic simulation of the lock runtime: instances of the real
 * service on one in-memory log, every promise ordered by fast-check's
 * scheduler, faults at every await (see test/simulation/support). Each run
 * must keep every check: the audit's rules (never two live holders,
 * generations never repeat), one event per requestId, every acknowledged
 * command present exactly once, a repeated request answered as the first
 * was, and the clients' lock history linearizable against the lock model.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, it, vi } from "vitest";
import { noSetup, simulate, scenarioArb } from "./support/simulation.ts";
import { SimFigures, SIM_RUNS, SIM_TIMEOUT_MS, simParameters } from "./support/settings.ts";
import { useSimTimers } from "./support/sim-cluster.ts";
import { lockPlanArb, lockWorkload } from "./support/workloads.ts";

describe("simulation: locks", () => {
  beforeAll(useSimTimers);
  afterAll(() => vi.useRealTimers());

  it(
    `keeps every lock check over ${SIM_RUNS} schedules with faults, crashes and duplicate deliveries`,
    async () => {
      const figures = new SimFigures();
      await fc.assert(
        fc.asyncProperty(fc.scheduler(), scenarioArb(), lockPlanArb, async (s, scenario, plan) => {
          const outcome = await simulate(s, "lock", scenario, noSetup, lockWorkload(plan));
          figures.add(outcome);
          if (outcome.problems.length > 0) throw new Error(outcome.problems.join("\n"));
        }),
        simParameters(),
      );
      console.log(figures.summary("lock"));
    },
    SIM_TIMEOUT_MS,
  );
});
