/**
 * Mutation checks: the simulation at its default settings catches each
 * deliberately broken runtime — a proxy decider without its cap check, a
 * lock that forgets to bump the generation, a runtime that appends without
 * the expected sequence. Each property must fail, and for the right reason.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { appendsWithoutExpectedSeq, lockKeepsGeneration, proxySkipsCapCheck } from "./support/mutations.ts";
import { simulationProperty } from "./support/properties.ts";
import { SIM_TIMEOUT_MS, simParameters } from "./support/settings.ts";
import { useSimTimers, type Mutation, type SimKind } from "./support/sim-cluster.ts";

/** Runs the kind's property on the mutated runtime; resolves with the failure it found (undefined: none). */
async function failureOf(kind: SimKind, mutation: Mutation): Promise<{ message: string; runs: number } | undefined> {
  // Stop at the first failing schedule (no shrinking): finding it is what is checked.
  const details = await fc.check(simulationProperty(kind, { mutation }), { ...simParameters(), endOnFailure: true });
  if (!details.failed) return undefined;
  const error = details.errorInstance;
  return { message: error instanceof Error ? error.message : String(error), runs: details.numRuns };
}

describe("mutation checks: the simulation catches a broken runtime", () => {
  beforeAll(useSimTimers);
  afterAll(() => vi.useRealTimers());

  it(
    "a proxy decider that skips the cap check",
    async () => {
      const found = await failureOf("proxy", proxySkipsCapCheck);
      console.log(`cap check skipped: caught after ${found?.runs} schedules`);
      expect(found?.message).toMatch(/proxy-cap-exceeded/);
    },
    SIM_TIMEOUT_MS,
  );

  it(
    "a lock that forgets to bump the generation",
    async () => {
      const found = await failureOf("lock", lockKeepsGeneration);
      console.log(`generation not bumped: caught after ${found?.runs} schedules`);
      expect(found?.message).toMatch(/stream-audit.*lock-generation|lock-history-not-linearizable/);
    },
    SIM_TIMEOUT_MS,
  );

  it(
    "a runtime that appends without the expected sequence",
    async () => {
      const found = await failureOf("lock", appendsWithoutExpectedSeq);
      console.log(`no expected sequence: caught after ${found?.runs} schedules: ${found?.message}`);
      // Which rule breaks first depends on the schedule: two holders, a repeated generation, or a renew by a holder the stream no longer has.
      expect(found?.message).toMatch(/two-live-lock-holders|lock-generation|lock-history-not-linearizable|lock-renew-not-holder/);
    },
    SIM_TIMEOUT_MS,
  );
});
