import { defineConfig } from "vitest/config";

// The tests `npm run test:mutation` runs against each mutant of the pure core
// (stryker.config.mjs): the unit and simulation tests of the deciders, folds,
// selection, placement, audit rules and subject tokens. No nats-server, so a
// mutant is judged in milliseconds; Stryker runs only the tests that cover it.
export default defineConfig({
  test: {
    include: [
      "test/locks/decide-lock.unit.test.ts",
      "test/locks/lock-fold-corruption.unit.test.ts",
      "test/locks/lock-queue.unit.test.ts",
      "test/locks/lock-queue-model.sim.test.ts",
      "test/locks/lock-fold-queue.unit.test.ts",
      "test/proxies/decide-proxy.unit.test.ts",
      "test/proxies/cooldown-backoff.unit.test.ts",
      "test/proxies/proxy-selection.unit.test.ts",
      "test/proxies/proxy-read-model.unit.test.ts",
      "test/proxies/proxy-fold.unit.test.ts",
      "test/proxies/proxy-selection-index.sim.test.ts",
      "test/proxies/proxy-selection-index.unit.test.ts",
      "test/routes/decide-route.unit.test.ts",
      "test/routes/decide-host.unit.test.ts",
      "test/routes/host-capacity.unit.test.ts",
      "test/routes/host-admission-lapse.unit.test.ts",
      "test/routes/chooser.unit.test.ts",
      "test/routes/route-projection.unit.test.ts",
      "test/routes/route-fold-seen.unit.test.ts",
      "test/routes/placement-fast-path.sim.test.ts",
      "test/routes/host-load-order.unit.test.ts",
      "test/routes/seen-lists.unit.test.ts",
      "test/routes/route-module.unit.test.ts",
      "test/tools/audit-rules.unit.test.ts",
      "test/tools/stream-bounds.unit.test.ts",
      "test/tools/audit-report.unit.test.ts",
      "test/tools/audit-details.unit.test.ts",
      "test/events/subject-token.unit.test.ts",
      "test/mutation/**/*.unit.test.ts",
    ],
    setupFiles: ["test/mutation/fast-check-setup.ts"],
    testTimeout: 120_000,
  },
});
