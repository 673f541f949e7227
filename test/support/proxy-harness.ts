/**
 * An in-memory proxy service for unit and simulation tests: the real actor
 * runtime (and its turn machine), the real proxy module (leasing, read model,
 * endpoints, sweep) on a {@link MemoryEventLog} and a {@link ManualClock}.
 * `restart()` drops the runtime and module and builds new ones on the same log,
 * as a service restart on the same stream would.
 */
import { pino } from "pino";
import { ActorRuntime } from "../../src/actors/actor-runtime.ts";
import { ManualClock } from "../../src/actors/clock.ts";
import { proxyModule, type ProxyModule } from "../../src/proxy/module.ts";
import type { TurnResult } from "../../src/actors/actor-runtime.ts";
import { resolveConfig, type ServiceConfig } from "../../src/config.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { type EventEnvelope, type RecordedEvent } from "../../src/events/envelope.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import type { KindContext } from "../../src/transport/kind-module.ts";
import type { Delivery } from "../../src/transport/endpoint.ts";
import { decodeOrThrow, T0 } from "./event-builders.ts";
import { onTheWire } from "./on-the-wire.ts";

/** Settings of an in-memory proxy service. */
export interface ProxyHarnessOptions {
  readonly cooldownMs?: number;
  readonly dedupWindowMs?: number;
  /** Lease ids (default: `lease-1`, `lease-2`, ... across restarts). */
  readonly newId?: () => string;
  readonly clock?: ManualClock;
  /** Share another harness's log (a second service instance on the same stream). */
  readonly log?: MemoryEventLog;
}

/** An in-memory proxy service and its controls. */
export interface ProxyHarness {
  readonly clock: ManualClock;
  readonly log: MemoryEventLog;
  readonly config: ServiceConfig;
  readonly subjects: Subjects;
  /** The current module (a new one after each restart). */
  readonly module: ProxyModule;
  readonly runtime: ActorRuntime;
  /** Runs `proxy.<op>` with `body` (a JSON value, or raw text) as the endpoint would; `options` as a durable command's. */
  call(op: string, body: unknown, options?: Delivery): Promise<TurnResult>;
  /** Runs the module's periodic sweep now. */
  sweep(): Promise<void>;
  /** Stops the module and runtime and starts new ones on the same log. */
  restart(): Promise<void>;
  /** Every proxy event in the log, in order. */
  events(): RecordedEvent<EventEnvelope>[];
  stop(): Promise<void>;
}

const quiet = pino({ level: "silent" });
let harnesses = 0;
const encoder = new TextEncoder();

/** T0 of every in-memory proxy test: 2026-01-01T00:00:00.000Z. */
export const PROXY_T0 = T0;

/** Starts an in-memory proxy service. */
export async function startProxyHarness(options: ProxyHarnessOptions = {}): Promise<ProxyHarness> {
  const clock = options.clock ?? new ManualClock(PROXY_T0);
  const log = options.log ?? new MemoryEventLog({ now: () => clock.now(), dedupWindowMs: options.dedupWindowMs ?? 120_000 });
  const config = resolveConfig({
    prefix: "sim",
    cooldownMs: options.cooldownMs ?? 900_000,
    dedupWindowMs: options.dedupWindowMs ?? 120_000,
  });
  const subjects = new Subjects(config.prefix);
  let counter = 0;
  const newId = options.newId ?? (() => `lease-${++counter}`);
  // Message ids must not collide with another harness's on a shared log.
  const instance = ++harnesses;
  let msgIds = 0;

  const build = async (): Promise<{ runtime: ActorRuntime; module: ProxyModule }> => {
    const runtime = new ActorRuntime({
      log,
      subjects,
      clock,
      logger: quiet,
      dedupWindowMs: config.dedupWindowMs,
      newMsgId: () => `msg-${instance}-${++msgIds}`,
    });
    const ctx: KindContext = { runtime, log, subjects, config, clock, logger: quiet, newId };
    const module = proxyModule(ctx);
    await module.start?.();
    return { runtime, module };
  };
  let current = await build();

  const harness: ProxyHarness = {
    clock,
    log,
    config,
    subjects,
    get module() {
      return current.module;
    },
    get runtime() {
      return current.runtime;
    },
    call(op, body, options) {
      const endpoint = current.module.endpoints.find((e) => e.op === op);
      if (endpoint === undefined) throw new Error(`no proxy endpoint ${op}`);
      return endpoint.run(encoder.encode(typeof body === "string" ? body : JSON.stringify(body)), options).then(onTheWire);
    },
    sweep: () => current.module.sweep?.() ?? Promise.resolve(),
    async restart() {
      await current.runtime.drain();
      await current.module.stop?.();
      current = await build();
    },
    events() {
      const filter = `${subjects.prefix}.events.proxy.`;
      return log.messages.filter((m) => m.subject.startsWith(filter)).map((m) => decodeOrThrow(m, "unparsable proxy event"));
    },
    async stop() {
      await current.runtime.drain();
      await current.module.stop?.();
    },
  };
  return harness;
}
