/**
 * The same seed gives the same trace: each kind's property, run twice from
 * one seed — the second time beside a worker thread that keeps a core busy
 * — must record the same events (subject, sequence, stored instant, bytes),
 * the same client operations with their simulated instants and answers, and
 * the same verdicts, run by run; and a run replayed alone (SIM_PATH) must
 * be the run it was. Nothing in a run may depend on the machine's clock or
 * load, or on the runs before it, only on its seed.
 */
import { createHash } from "node:crypto";
import { Worker } from "node:worker_threads";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { simulationProperty } from "./support/properties.ts";
import { DEFAULT_SIM_SEED, SIM_TIMEOUT_MS } from "./support/settings.ts";
import { useSimTimers, type SimKind } from "./support/sim-cluster.ts";
import type { SimOutcome } from "./support/simulation.ts";

const RUNS = 40;
const decoder = new TextDecoder();

/** One run, as a digest of everything it recorded. */
function digest(outcome: SimOutcome): string {
  const hash = createHash("sha256");
  for (const m of outcome.cluster.log.messages)
    hash.update(`${m.seq} ${m.subject} ${m.time} ${m.msgId ?? ""} ${decoder.decode(m.payload)}\n`);
  for (const r of outcome.clients.records) hash.update(`${JSON.stringify(r)}\n`);
  hash.update(outcome.problems.join("\n"));
  return hash.digest("hex");
}

/** The digests of the property's first RUNS runs from `seed` (failures included: a trace is a trace), or of the one run `path` names. */
async function trace(kind: SimKind, seed: number, path?: string): Promise<string[]> {
  const digests: string[] = [];
  await fc.check(
    simulationProperty(kind, { onRun: (o) => digests.push(digest(o)) }),
    // No shrinking: exactly the runs the seed draws.
    path === undefined ? { seed, numRuns: RUNS, endOnFailure: true } : { seed, path, numRuns: 1, endOnFailure: true },
  );
  return digests;
}

/** A worker thread spinning on a core until stopped: load the run does not control. */
function cpuHog(): { stop(): Promise<number> } {
  const worker = new Worker("for (;;) {}", { eval: true });
  return { stop: () => worker.terminate() };
}

describe("simulation determinism", () => {
  beforeAll(useSimTimers);
  afterAll(() => vi.useRealTimers());

  for (const kind of ["lock", "proxy", "route"] as const) {
    it(
      `the same seed gives the same ${kind} trace twice, the second time beside a busy core`,
      async () => {
        const first = await trace(kind, DEFAULT_SIM_SEED);
        const hog = cpuHog();
        let second: string[];
        try {
          second = await trace(kind, DEFAULT_SIM_SEED);
        } finally {
          await hog.stop();
        }
        expect(first).toHaveLength(RUNS);
        expect(second).toEqual(first);
        // A run replayed alone (as SIM_PATH replays a counterexample) is the run it was in the sequence.
        expect(await trace(kind, DEFAULT_SIM_SEED, String(RUNS - 1))).toEqual([first[RUNS - 1]]);
        // And the seed matters: another one draws other runs.
        expect(await trace(kind, DEFAULT_SIM_SEED + 1)).not.toEqual(first);
      },
      SIM_TIMEOUT_MS,
    );
  }
});
