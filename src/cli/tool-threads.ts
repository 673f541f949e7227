/**
 * Whether `replay` and `audit` fold on a second thread (src/tools/worker-read.ts):
 * only when LEASEHOLD_TOOLS_THREADS is 2. One thread is the default because on
 * the busy 2-core machine it was measured on, the worker's start-up (it loads
 * the folds afresh) cost more than the overlap gained (docs/performance.md, "Tools").
 */
export function toolsOnTwoThreads(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.LEASEHOLD_TOOLS_THREADS === "2";
}
