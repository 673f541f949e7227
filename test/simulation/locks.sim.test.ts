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
import { simulationProperty } from "./support/properties.ts";
import { SimFigures, SIM_RUNS, SIM_TIMEOUT_MS, simParameters } from "./support/settings.ts";
import { useSimTimers } from "./support/sim-cluster.ts";

describe("simulation: locks", () => {
  beforeAll(useSimTimers);
  afterAll(() => vi.useRealTimers());

  it(
    `keeps every lock check over ${SIM_RUNS} schedules with faults, crashes and duplicate deliveries`,
    async () => {
      const figures = new SimFigures("lock");
      await fc.assert(simulationProperty("lock", { onRun: (outcome) => figures.add(outcome) }), simParameters());
      console.log(figures.summary());
    },
    SIM_TIMEOUT_MS,
  );
});
