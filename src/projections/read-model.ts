/**
 * A read model built on one kind's {@link KindProjection}: the projection's
 * lifecycle and freshness, so each read model only adds its own indexes.
 * Several read models (and the kind's actors) share one projection, hence
 * one follower per kind and instance.
 */
import type { KindProjection } from "./kind-projection.ts";

/** Base of the read models: delegates lifecycle and freshness to the projection. */
export abstract class ProjectedReadModel<State> {
  constructor(protected readonly projection: KindProjection<State>) {}

  /** Starts the projection (idempotent) and waits until it has caught up. */
  start(): Promise<void> {
    return this.projection.start();
  }

  /** Stops the projection. */
  stop(): Promise<void> {
    return this.projection.stop();
  }

  /** Waits (bounded) until every event of the kind the stream held when called is folded. */
  fresh(timeoutMs?: number): Promise<void> {
    return this.projection.fresh(timeoutMs);
  }
}
