/** The lock kind in a service instance: its actors (and their projection), the waiting acquires' runtime, and endpoints. */
import { LockWaiters } from "../app/lock-waiters.ts";
import { lockLogic } from "../logic/lock/logic.ts";
import { lockEndpoints } from "../api/endpoints.ts";
import type { KindContext, KindModule } from "./kind-module.ts";

/** Registers the lock actors with the runtime and returns the lock endpoints. */
export function lockModule(ctx: KindContext): KindModule {
  const { config, runtime } = ctx;
  const projection = runtime.register(
    lockLogic({ lockTtlMs: config.lockTtlMs, maxTtlMs: config.maxTtlMs, claimWindowMs: config.claimWindowMs }),
  );
  const waiters = new LockWaiters({ runtime, projection, clock: ctx.clock, logger: ctx.logger });
  return {
    endpoints: lockEndpoints(runtime, { waiters, maxWaitMs: config.maxWaitMs }),
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
