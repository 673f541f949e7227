/**
 * How many schedules a simulation property runs, and how to replay one:
 * `SIM_RUNS` (default 1000 per kind), `SIM_SEED` and `SIM_PATH` (fast-check's
 * seed and the path of the shrunk counterexample it printed).
 */
import { appendFileSync } from "node:fs";
import type fc from "fast-check";

/** Schedules per property (SIM_RUNS, default 1000). */
export const SIM_RUNS = Number(process.env.SIM_RUNS ?? 1000);

/** fast-check parameters of a simulation property: runs, and the seed and path to replay when given. */
export function simParameters<T>(): fc.Parameters<T> {
  const seed = process.env.SIM_SEED;
  const path = process.env.SIM_PATH;
  return {
    numRuns: SIM_RUNS,
    ...(seed === undefined || seed === "" ? {} : { seed: Number(seed) }),
    ...(path === undefined || path === "" ? {} : { path }),
  };
}

/** Test timeout for a property of `SIM_RUNS` schedules (about 100 ms each, at least 2 minutes). */
export const SIM_TIMEOUT_MS = Math.max(120_000, SIM_RUNS * 100);

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
