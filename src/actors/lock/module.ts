/** The lock kind as a service module: its actor logic, the waiting acquires' runtime, and endpoints. */
import type { KindContext, KindModule } from "../../kind-module.ts";
import { lockEndpoints } from "../../api/lock-endpoints.ts";
import { lockLogic } from "./logic.ts";
import { LockWaiters } from "./lock-waiters.ts";

/** Registers the lock actors (and their projection) with the runtime and returns the lock endpoints. */
export function lockModule(ctx: KindContext): KindModule {
  const { config } = ctx;
  const projection = ctx.host.register(
    lockLogic({ lockTtlMs: config.lockTtlMs, maxTtlMs: config.maxTtlMs, claimWindowMs: config.claimWindowMs }),
  );
  const waiters = new LockWaiters({ host: ctx.host, projection, clock: ctx.clock, logger: ctx.logger });
  return {
    endpoints: lockEndpoints(ctx.host, { waiters, maxWaitMs: config.maxWaitMs }),
    start: () => projection.start(),
    sweep: () => {
      projection.pruneReplies(ctx.clock.now());
      return Promise.resolve();
    },
    // Parked acquires are answered UNAVAILABLE first, so that stopping does not wait for their waits to end.
    stopping: () => waiters.stop(),
    stop: () => {
      waiters.stop();
      return projection.stop();
    },
  };
}
