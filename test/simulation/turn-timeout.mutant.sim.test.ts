/**
 * Mutation check: a turn that never times out. The runtime's deadline sweep
 * (the bound on a turn whose step does not end — an append stuck past its
 * own deadline) is replaced by one that never answers, for this file only;
 * the simulation at its default settings must find a live instance that
 * never answers.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { simulationProperty } from "./support/properties.ts";
import { SIM_TIMEOUT_MS, simParameters } from "./support/settings.ts";
import { useSimTimers } from "./support/sim-cluster.ts";

// The sweep lives in the runtime's own module, so the mutant changes the class the runtime uses (this file's copy only).
vi.mock("../../src/actors/actor-runtime.ts", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../src/actors/actor-runtime.ts")>();
  real.TurnDeadlines.prototype.add = function neverExpires(): void {};
  return real;
});

describe("mutation check: the simulation catches a turn that never times out", () => {
  beforeAll(useSimTimers);
  afterAll(() => vi.useRealTimers());

  it(
    "finds a live instance that never answers",
    async () => {
      const details = await fc.check(simulationProperty("lock"), { ...simParameters(), endOnFailure: true });
      const message = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
      console.log(`turn without deadline: caught after ${details.numRuns} schedules`);
      expect(details.failed).toBe(true);
      expect(message).toMatch(/live-instance-never-answered/);
    },
    SIM_TIMEOUT_MS,
  );
});
