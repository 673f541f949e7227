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
import { simulationProperty } from "./support/properties.ts";
import { SimFigures, SIM_RUNS, SIM_TIMEOUT_MS, simParameters } from "./support/settings.ts";
import { useSimTimers } from "./support/sim-cluster.ts";

describe("simulation: proxies", () => {
  beforeAll(useSimTimers);
  afterAll(() => vi.useRealTimers());

  it(
    `keeps every proxy check over ${SIM_RUNS} schedules with faults, crashes and duplicate deliveries`,
    async () => {
      const figures = new SimFigures("proxy");
      await fc.assert(simulationProperty("proxy", { onRun: (outcome) => figures.add(outcome) }), simParameters());
      console.log(figures.summary());
    },
    SIM_TIMEOUT_MS,
  );
});
