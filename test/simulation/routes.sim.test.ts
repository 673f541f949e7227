/**
 * Deterministic simulation of route placement (host and route actors, host
 * and route tables) with faults, crashes and duplicate deliveries: every run
 * keeps the audit's rules (one host per conversation key, placements only on
 * healthy hosts), one event per requestId, every acknowledged placement
 * present once, and every answer for one key naming the same host.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, it, vi } from "vitest";
import { simulationProperty } from "./support/properties.ts";
import { SimFigures, SIM_RUNS, SIM_TIMEOUT_MS, simParameters } from "./support/settings.ts";
import { useSimTimers } from "./support/sim-cluster.ts";

describe("simulation: routes", () => {
  beforeAll(useSimTimers);
  afterAll(() => vi.useRealTimers());

  it(
    `keeps every route check over ${SIM_RUNS} schedules with faults, crashes and duplicate deliveries`,
    async () => {
      const figures = new SimFigures("route");
      await fc.assert(simulationProperty("route", { onRun: (outcome) => figures.add(outcome) }), simParameters());
      console.log(figures.summary());
    },
    SIM_TIMEOUT_MS,
  );
});
