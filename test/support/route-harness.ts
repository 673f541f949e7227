/**
 * The route module as the service runs it (host and route actors, host and
 * route tables, endpoints, sweep), on an in-memory log and a manual clock:
 * requests go through the real endpoints as JSON bytes, and a restart is a
 * new actor runtime and module on the same log.
 */
import { pino } from "pino";
import { ActorRuntime } from "../../src/actors/actor-runtime.ts";
import { ManualClock } from "../../src/actors/clock.ts";
import { type TurnResult } from "../../src/actors/actor-runtime.ts";
import { routeModule } from "../../src/route/module.ts";
import type { Endpoint } from "../../src/transport/endpoint.ts";
import { resolveConfig, type ServiceConfig } from "../../src/config.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { type RecordedEvent } from "../../src/events/envelope.ts";
import { Subjects, type ActorKind } from "../../src/contract/subjects.ts";
import type { KindModule } from "../../src/transport/kind-module.ts";
import { decodeOrThrow, T0 } from "./event-builders.ts";
import { onTheWire } from "./on-the-wire.ts";

export { T0 };

/** Settings of a harness. */
export interface RouteHarnessOptions {
  readonly routeIdleMs?: number;
  readonly routeChooser?: ServiceConfig["routeChooser"];
  readonly dedupWindowMs?: number;
  readonly clock?: ManualClock;
}

/** A running in-memory route module. */
export interface RouteHarness {
  readonly clock: ManualClock;
  readonly log: MemoryEventLog;
  readonly subjects: Subjects;
  readonly config: ServiceConfig;
  /** The current actor runtime (replaced by {@link RouteHarness.restart}). */
  readonly runtime: ActorRuntime;
  /** Sends `body` (JSON value, or raw text) to the `kind.op` endpoint. */
  call(kindOp: string, body: unknown, requestedAt?: number): Promise<TurnResult>;
  /** Runs the module's sweep once. */
  sweep(): Promise<void>;
  /** Stops the module and starts a new actor runtime and module on the same log. */
  restart(): Promise<void>;
  stop(): Promise<void>;
  /** Every event of `kind` (and `id`, when given), decoded; fails on a message that does not parse. */
  events(kind?: ActorKind, id?: string): RecordedEvent[];
}

const encoder = new TextEncoder();

/** Starts the route module on a fresh in-memory log. */
export async function startRouteHarness(options: RouteHarnessOptions = {}): Promise<RouteHarness> {
  const clock = options.clock ?? new ManualClock(T0);
  const config = resolveConfig({
    prefix: "sim",
    routeIdleMs: options.routeIdleMs ?? 1_800_000,
    routeChooser: options.routeChooser ?? "least-loaded",
    dedupWindowMs: options.dedupWindowMs ?? 120_000,
  });
  const log = new MemoryEventLog({ now: () => clock.now(), dedupWindowMs: config.dedupWindowMs });
  const subjects = new Subjects(config.prefix);
  const logger = pino({ level: "silent" });
  let ids = 0;

  let runtime!: ActorRuntime;
  let module!: KindModule;
  let endpoints = new Map<string, Endpoint>();
  const boot = async () => {
    runtime = new ActorRuntime({ log, subjects, clock, logger, dedupWindowMs: config.dedupWindowMs });
    module = routeModule({ runtime, log, subjects, config, clock, logger, newId: () => `id-${++ids}` });
    endpoints = new Map(module.endpoints.map((e) => [`${e.kind}.${e.op}`, e]));
    await module.start?.();
  };
  await boot();

  return {
    clock,
    log,
    subjects,
    config,
    get runtime() {
      return runtime;
    },
    call(kindOp, body, requestedAt) {
      const endpoint = endpoints.get(kindOp);
      if (endpoint === undefined) throw new Error(`no endpoint ${kindOp}`);
      const data = typeof body === "string" ? encoder.encode(body) : encoder.encode(JSON.stringify(body));
      return endpoint.run(data, requestedAt === undefined ? undefined : { requestedAt }).then(onTheWire);
    },
    async sweep() {
      await module.sweep?.();
    },
    async restart() {
      await runtime.drain();
      await module.stop?.();
      await boot();
    },
    async stop() {
      await runtime.drain();
      await module.stop?.();
    },
    events(kind, id) {
      const filter =
        kind === undefined
          ? `${subjects.prefix}.events.`
          : id === undefined
            ? `${subjects.prefix}.events.${kind}.`
            : subjects.event(kind, id);
      const out: RecordedEvent[] = [];
      for (const m of log.messages) {
        if (id === undefined ? !m.subject.startsWith(filter) : m.subject !== filter) continue;
        out.push(decodeOrThrow(m, "unparsable event"));
      }
      return out;
    },
  };
}

/** The reply of a successful turn (fails the test with the refusal otherwise). */
export function okReply<T = Record<string, unknown>>(result: TurnResult): T {
  if (!result.ok) throw new Error(`expected success, got ${result.rejection.code}: ${result.rejection.message}`);
  return result.reply as T;
}

/** The error code of a refused turn, undefined on success. */
export function codeOf(result: TurnResult): string | undefined {
  return result.ok ? undefined : result.rejection.code;
}
