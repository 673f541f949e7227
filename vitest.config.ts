import { defineConfig } from "vitest/config";

// Three tiers (docs/testing.md): unit (no server), int (a real nats-server
// started once by globalSetup), sim (fast-check model runs on the in-memory log).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: "unit",
          include: ["test/**/*.unit.test.ts"],
        },
      },
      {
        test: {
          name: "int",
          include: ["test/**/*.int.test.ts"],
          globalSetup: ["test/support/nats-global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "sim",
          include: ["test/**/*.sim.test.ts"],
          testTimeout: 120_000,
        },
      },
    ],
  },
});
