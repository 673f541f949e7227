/** The proxy kind in a service instance: its actors, read model, leasing, endpoints and sweep. */
import { proxyLogic } from "./logic.ts";
import { proxyEndpoints } from "./endpoints.ts";
import { ProxyLeasing } from "./leasing.ts";
import { ProxyReadModel } from "./read-model.ts";
import type { KindContext, KindModule } from "../transport/kind-module.ts";

/** The proxy module, with its read model exposed for tests and tools. */
export interface ProxyModule extends KindModule {
  readonly model: ProxyReadModel;
}

/** Registers the proxy actors with the runtime and returns the proxy endpoints. */
export function proxyModule(ctx: KindContext): ProxyModule {
  const retentionMs = ctx.config.cooldownMs;
  const projection = ctx.runtime.register(
    proxyLogic({ cooldownMs: retentionMs, cooldownBackoff: ctx.config.cooldownBackoff, maxCooldownMs: ctx.config.maxCooldownMs }),
  );
  const model = new ProxyReadModel(projection, { retentionMs, dedupWindowMs: ctx.config.dedupWindowMs });
  const proxies = new ProxyLeasing(ctx.runtime, model, ctx.clock, ctx.newId, ctx.config.dedupWindowMs);
  return {
    model,
    endpoints: proxyEndpoints({ proxies, model, clock: ctx.clock }),
    start: () => model.start(),
    // Garbage collection only: leases past retention and elapsed cooldowns answer the same whether dropped or not.
    sweep: () => {
      const now = ctx.clock.now();
      model.prune(now);
      projection.pruneReplies(now);
      return Promise.resolve();
    },
    stop: () => model.stop(),
  };
}
