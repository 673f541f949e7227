import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// Four tiers (docs/testing.md): unit (no server), int (a real nats-server
// started once by globalSetup), sim (fast-check model runs on the in-memory
// log), and faults: drills that kill and restart nats-servers under load
// with real `serve` processes. Their timing claims (answers within 5 s of
// NATS being back) need the machine to themselves, so `npm test` runs them
// after the other tiers, one file at a time.
const FAULT_DRILLS = ["test/faults/**/*.int.test.ts", "test/chaos/**/*.int.test.ts"];
export default defineConfig({
  test: {
    // Vitest's default, one worker fewer than the cores, is one worker on a 2-core machine; the integration files
    // mostly wait on nats-server and child processes, and two workers took the unit, sim and int tiers from 587 s
    // to 307 s there.
    maxWorkers: Math.max(2, availableParallelism() - 1),
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
          exclude: [...FAULT_DRILLS, "**/node_modules/**"],
          globalSetup: ["test/support/nats-global-setup.ts"],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "faults",
          include: FAULT_DRILLS,
          globalSetup: ["test/support/nats-global-setup.ts"],
          fileParallelism: false,
          // The drills time real processes (three servers, two instances, 16 clients) on a 2-core
          // machine; a failed drill is run once more, and only a failure that repeats fails the run.
          retry: 1,
          testTimeout: 120_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "sim",
          include: ["test/**/*.sim.test.ts"],
          // Simulated time, fixed seeds: the only wall clock left is this bound, which tells a hang from a slow
          // machine. A 2-core machine beside a CPU hog ran the 100,000-event audit for 300 s (51 s when quiet).
          testTimeout: 900_000,
        },
      },
    ],
  },
});
