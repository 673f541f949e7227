/**
 * One deadline per command, whatever it spans: the reads of the read models
 * an application command waits for take only the time its deadline leaves.
 */
import type { ActorRuntime } from "./actor-runtime.ts";
import { LogUnavailableError } from "../events/event-log.ts";

/** What can be caught up with the stream within a timeout (a projection or a read model). */
export interface Freshness {
  fresh(timeoutMs?: number): Promise<void>;
}

/** Catches `model` up with the stream before `deadline`; throws as a failed read once it has passed. */
export function freshBy(model: Freshness, runtime: ActorRuntime, deadline: number): Promise<void> {
  const left = runtime.remainingMs(deadline);
  if (left <= 0) return Promise.reject(new LogUnavailableError("the request's deadline passed before the read models caught up", false));
  return model.fresh(left);
}
