/** The lock kind as a service module: its actor logic and endpoints. */
import type { KindContext, KindModule } from "../../kind-module.ts";
import { lockEndpoints } from "../../api/lock-endpoints.ts";
import { lockLogic } from "./logic.ts";

/** Registers the lock actors (and their projection) with the runtime and returns the lock endpoints. */
export function lockModule(ctx: KindContext): KindModule {
  const projection = ctx.host.register(lockLogic({ lockTtlMs: ctx.config.lockTtlMs, maxTtlMs: ctx.config.maxTtlMs }));
  return {
    endpoints: lockEndpoints(ctx.host),
    start: () => projection.start(),
    sweep: () => {
      projection.pruneReplies(ctx.clock.now());
      return Promise.resolve();
    },
    stop: () => projection.stop(),
  };
}
