/** The lock kind in a service instance: its actors (and their projection) and endpoints. */
import { lockLogic } from "../actors/lock/logic.ts";
import { lockEndpoints } from "../api/endpoints.ts";
import type { KindContext, KindModule } from "./kind-module.ts";

/** Registers the lock actors with the runtime and returns the lock endpoints. */
export function lockModule(ctx: KindContext): KindModule {
  const projection = ctx.runtime.register(lockLogic({ lockTtlMs: ctx.config.lockTtlMs, maxTtlMs: ctx.config.maxTtlMs }));
  return {
    endpoints: lockEndpoints(ctx.runtime),
    start: () => projection.start(),
    sweep: () => {
      projection.pruneReplies(ctx.clock.now());
      return Promise.resolve();
    },
    stop: () => projection.stop(),
  };
}
