// @ts-check
/**
 * Mutation testing of the pure core (`npm run test:mutation`, not part of
 * `npm test`): every kind's decide and evolve, proxy selection and its index,
 * route placement, the audit rules and subject tokens. Incremental: the
 * results of the last run are kept in .mutation/stryker-incremental.json
 * (committed; a hidden folder at the root, so that searches of the tree and
 * the sandbox Stryker copies pass it over), so a rerun tests only mutants
 * whose code or tests changed.
 * docs/testing.md has the scores and the surviving mutants explained.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutation.config.ts" },
  checkers: ["typescript"],
  // The checker only needs the sources: a mutant that does not type-check is dropped before any test runs.
  tsconfigFile: "tsconfig.mutation.json",
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  mutate: [
    "src/host/decide.ts",
    "src/lock/logic.ts",
    "src/proxy/decide.ts",
    "src/route/decide.ts",
    "src/lock/state.ts",
    "src/proxy/state.ts",
    "src/route/state.ts",
    "src/host/state.ts",
    "src/proxy/select.ts",
    "src/proxy/selection-index.ts",
    "src/route/chooser.ts",
    "src/tools/audit.ts",
    "src/tools/audit/*.ts",
    "src/contract/subjects.ts",
  ],
  coverageAnalysis: "perTest",
  incremental: true,
  incrementalFile: ".mutation/stryker-incremental.json",
  // The machine has two cores shared with others.
  concurrency: 2,
  timeoutMS: 10_000,
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "reports/mutation/mutation.html" },
  jsonReporter: { fileName: "reports/mutation/mutation.json" },
  ignorePatterns: ["bench/results", ".leasehold", ".tools", ".mutation", "reports", "dist", "coverage"],
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
};
