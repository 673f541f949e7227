/** The proxy kind as a service module: its actor logic, read model, selector, endpoints and sweep. */
import type { KindContext, KindModule } from "../../kind-module.ts";
import { proxyEndpoints } from "../../api/proxy-endpoints.ts";
import { ProxyReadModel } from "../../projections/proxy-read-model.ts";
import { proxyLogic } from "./logic.ts";
import { ProxySelector } from "./selector.ts";

/** The proxy module, with its read model exposed for tests and tools. */
export interface ProxyModule extends KindModule {
  readonly model: ProxyReadModel;
}

/** Registers the proxy actors with the host and returns the proxy endpoints. */
export function proxyModule(ctx: KindContext): ProxyModule {
  const retentionMs = ctx.config.cooldownMs;
  const projection = ctx.host.register(
    proxyLogic({ cooldownMs: retentionMs, cooldownBackoff: ctx.config.cooldownBackoff, maxCooldownMs: ctx.config.maxCooldownMs }),
  );
  const model = new ProxyReadModel(projection, { retentionMs, dedupWindowMs: ctx.config.dedupWindowMs });
  const selector = new ProxySelector(ctx.host, model, ctx.clock, ctx.newId, ctx.config.dedupWindowMs);
  return {
    model,
    endpoints: proxyEndpoints({ host: ctx.host, model, selector, clock: ctx.clock }),
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
