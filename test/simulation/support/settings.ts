/**
 * How many schedules a simulation property runs, and how to replay one:
 * `SIM_RUNS` (default 1000 per kind), `SIM_SEED` and `SIM_PATH` (fast-check's
 * seed and the path of the shrunk counterexample it printed). Without
 * `SIM_SEED` every property runs from one fixed seed, so `npm run test:sim`
 * gives the same outcome on every run and machine; `SIM_SEED=random` draws a
 * fresh one (campaigns), which fast-check prints with any failure.
 */
import { appendFileSync } from "node:fs";
import type fc from "fast-check";

/** Schedules per property (SIM_RUNS, default 1000). */
export const SIM_RUNS = Number(process.env.SIM_RUNS ?? 1000);

/** The seed of every simulation property unless SIM_SEED says otherwise. */
export const DEFAULT_SIM_SEED = 20260301;

/** The seed SIM_SEED names (a number, or "random": fast-check's own), else the default. */
export function simSeed(value = process.env.SIM_SEED): number | undefined {
  if (value === undefined || value === "") return DEFAULT_SIM_SEED;
  if (value === "random") return undefined;
  const seed = Number(value);
  if (!Number.isInteger(seed)) throw new Error(`SIM_SEED: expected an integer or "random", got ${JSON.stringify(value)}`);
  return seed;
}

/** fast-check parameters of a simulation property: runs, its seed, and the path to replay when given. */
export function simParameters<T>(): fc.Parameters<T> {
  const seed = simSeed();
  const path = process.env.SIM_PATH;
  return {
    numRuns: SIM_RUNS,
    ...(seed === undefined ? {} : { seed }),
    ...(path === undefined || path === "" ? {} : { path }),
  };
}

/**
 * Test timeout for a property of `SIM_RUNS` schedules: a bound that tells a hang from a loaded machine (about 15 ms
 * each when quiet, 85 ms beside a CPU hog on two cores; 500 ms each allowed, at least 15 minutes).
 */
export const SIM_TIMEOUT_MS = Math.max(900_000, SIM_RUNS * 500);

/** Figures of a property's runs, printed once it ends. */
export class SimFigures {
  private runs = 0;
  private events = 0;
  private operations = 0;
  private slowestAnswerMs = 0;
  private readonly started = process.hrtime.bigint();

  constructor(private readonly kind: string) {}

  /** Counts one run. */
  add(outcome: {
    cluster: { log: { messages: readonly unknown[] } };
    clients: { records: readonly unknown[]; slowestAnswerMs: number };
  }): void {
    this.runs++;
    this.events += outcome.cluster.log.messages.length;
    this.operations += outcome.clients.records.length;
    this.slowestAnswerMs = Math.max(this.slowestAnswerMs, outcome.clients.slowestAnswerMs);
    // Long campaigns say how far they got (SIM_PROGRESS_FILE), every 1000 runs.
    const progress = process.env.SIM_PROGRESS_FILE;
    if (progress !== undefined && progress !== "" && this.runs % 1000 === 0) appendFileSync(progress, `${this.summary()}\n`);
  }

  /** One line: runs (shrinking included), events and operations, slowest answer, wall time. */
  summary(): string {
    const seconds = Number(process.hrtime.bigint() - this.started) / 1e9;
    return (
      `${this.kind} simulation: ${this.runs} runs, ${this.operations} client operations, ${this.events} events, ` +
      `slowest answer ${this.slowestAnswerMs} ms (simulated), ${seconds.toFixed(1)} s`
    );
  }
}
