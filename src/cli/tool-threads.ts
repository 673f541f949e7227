/**
 * Whether `replay` and `audit` fold on a second thread (src/tools/worker-read.ts)
 * while the first only receives from NATS. By default they do when the
 * machine has two or more cores and the read is long enough to repay the
 * worker's start (about 0.35 s, from dist/ or from the bundle a checkout
 * makes): on a quiet 2-core machine two threads read 1,000,000 events
 * faster than one (docs/performance.md, "Two threads by default").
 * LEASEHOLD_TOOLS_THREADS=1 or 2 decides instead: one thread is the better
 * choice on a machine whose cores are busy with other work.
 */
import { availableParallelism } from "node:os";
import { ToolUsageError } from "../tools/errors.ts";

/** Reads of at least this many messages fold on a second thread by default. */
export const TWO_THREADS_FROM_MESSAGES = 100_000;

/** The help line of the commands that fold the stream. */
export const TOOL_THREADS_HELP = `\nLEASEHOLD_TOOLS_THREADS=1 folds on one thread, =2 on two (a worker folds while the main thread reads);
unset, two on a machine with two cores or more for a read of ${TWO_THREADS_FROM_MESSAGES.toLocaleString("en-US")} messages or more. The output is the same.`;

/** What LEASEHOLD_TOOLS_THREADS asks for: a thread count, or the default's choice. */
export type ToolThreads = 1 | 2 | "auto";

/** LEASEHOLD_TOOLS_THREADS, checked (a usage error names the values it takes). */
export function toolThreadsSetting(env: NodeJS.ProcessEnv = process.env): ToolThreads {
  const value = env.LEASEHOLD_TOOLS_THREADS;
  if (value === undefined || value === "") return "auto";
  if (value === "1" || value === "2") return Number(value) as 1 | 2;
  throw new ToolUsageError(
    `LEASEHOLD_TOOLS_THREADS is ${JSON.stringify(value)}; it takes 1 or 2 (unset: 2 on a multi-core machine for long reads)`,
  );
}

/** Whether a read of `messages` messages folds on a second thread, given the setting and the machine's cores. */
export function toolsOnTwoThreads(setting: ToolThreads, messages: number, cores: number = availableParallelism()): boolean {
  if (setting !== "auto") return setting === 2;
  return cores >= 2 && messages >= TWO_THREADS_FROM_MESSAGES;
}
