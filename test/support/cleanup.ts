/**
 * Cleanup for integration tests: tasks run (last first) after each test of
 * the calling file, and services and connections registered with them.
 */
import { afterEach } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import type { ServiceConfig } from "../../src/config.ts";
import type { Clock } from "../../src/actors/clock.ts";
import { connectNats, startTestService, type TestService } from "./nats.ts";

/** Registers cleanups that run (last first) after each test of the calling file. */
export function useCleanup(): { add(task: () => Promise<unknown> | void): void } {
  const tasks: (() => Promise<unknown> | void)[] = [];
  afterEach(async () => {
    const errors: unknown[] = [];
    for (const task of tasks.splice(0).reverse()) {
      try {
        await task();
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length > 0) throw errors[0];
  });
  return { add: (task) => void tasks.push(task) };
}

/** Test resources that are stopped or closed after each test. */
export interface TestServices {
  /** Starts a service on `prefix`, stopped after the test (or earlier by its own `stop`). */
  service(prefix: string, overrides?: Partial<ServiceConfig>, clock?: Clock): Promise<TestService>;
  /** Opens a client connection, closed after the test. */
  connect(): Promise<NatsConnection>;
  /** Runs `task` after the test. */
  defer(task: () => Promise<unknown> | void): void;
}

/** {@link TestServices} whose resources are released (last first) after each test of the calling file. */
export function useTestServices(): TestServices {
  const cleanup = useCleanup();
  return {
    async service(prefix, overrides = {}, clock) {
      const svc = await startTestService(prefix, overrides, clock);
      cleanup.add(() => svc.stop());
      return svc;
    },
    async connect() {
      const nc = await connectNats();
      cleanup.add(() => nc.close());
      return nc;
    },
    defer: (task) => cleanup.add(task),
  };
}
