/**
 * How a kind of lease plugs into a service instance: the endpoints it serves,
 * and optional lifecycle hooks (start followers, periodic sweep, stop).
 */
import type { Logger } from "pino";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { Clock } from "../actors/clock.ts";
import type { Endpoint } from "./endpoint.ts";
import type { EventLog } from "../events/event-log.ts";
import type { Subjects } from "../contract/subjects.ts";
import type { ServiceConfig } from "../config.ts";

/** What every kind module is given by the service. */
export interface KindContext {
  readonly runtime: ActorRuntime;
  readonly log: EventLog;
  readonly subjects: Subjects;
  readonly config: ServiceConfig;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Unguessable ids (CSPRNG in production; seeded in simulations). */
  readonly newId: () => string;
}

/** One kind's contribution to a service instance. */
export interface KindModule {
  readonly endpoints: readonly Endpoint[];
  /** Called once before endpoints are served (e.g. start stream followers). */
  start?(): Promise<void>;
  /** Called every `--sweep-interval-ms` (housekeeping; nothing may depend on when). */
  sweep?(): Promise<void>;
  /** Called first when the instance begins to stop, before it stops taking requests (answer long waits now). */
  stopping?(): void;
  /** Called after the endpoints stopped and turns in flight finished. */
  stop?(): Promise<void>;
}
