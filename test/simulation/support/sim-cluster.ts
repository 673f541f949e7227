/**
 * Service instances of the simulation: each one is the real runtime — the
 * actor runtime and its turn machines, the kind projections, the kind modules
 * and their endpoints (the request handling `startService` wires onto NATS)
 * — on its own {@link ScheduledLogView} of one shared in-memory log. Time is
 * vitest's fake timers: `Date.now()` is the service clock, `performance.now()`
 * the runtime's timer clock, and every deadline (the turn's `after`, the log
 * and projection waits, the follower watchdog) is a faked `setTimeout`. An
 * instance can crash (dropped: it answers nothing again) and be restarted:
 * a new runtime that folds the log from the start.
 */
import { pino } from "pino";
import { vi } from "vitest";
import type { Scheduler } from "fast-check";
import { ActorRuntime } from "../../../src/actors/actor-runtime.ts";
import { type Clock } from "../../../src/actors/clock.ts";
import { type TurnResult } from "../../../src/actors/actor-runtime.ts";
import type { KindLogic, Command } from "../../../src/actors/kind-logic.ts";
import { lockModule } from "../../../src/lock/module.ts";
import { proxyModule } from "../../../src/proxy/module.ts";
import { routeModule } from "../../../src/route/module.ts";
import type { Endpoint } from "../../../src/transport/endpoint.ts";
import { resolveConfig, type ServiceConfig } from "../../../src/config.ts";
import { MemoryEventLog } from "../../../src/events/memory-event-log.ts";
import { type EventEnvelope } from "../../../src/events/envelope.ts";
import { Subjects } from "../../../src/contract/subjects.ts";
import type { KindContext, KindModule } from "../../../src/transport/kind-module.ts";
import type { KindProjection } from "../../../src/projections/kind-projection.ts";
import { FaultPlan, never, ScheduledLogView, type LogMutation } from "./scheduled-log.ts";
import { onTheWire } from "../../support/on-the-wire.ts";

/** The instant every run starts at. */
export const SIM_T0 = Date.parse("2026-03-01T00:00:00.000Z");

/** The kinds a simulation can serve (route brings its host actors). */
export type SimKind = "lock" | "proxy" | "route";

/** Turns a kind's real logic into a deliberately broken one (mutation checks). */
export type LogicMutation = <S, C extends Command, E extends EventEnvelope>(logic: KindLogic<S, C, E>) => KindLogic<S, C, E>;

/** Deliberate defects injected into the runtime (none in a normal run). */
export interface Mutation {
  readonly log?: LogMutation;
  readonly logic?: LogicMutation;
}

/** The service clock of a simulation: the faked `Date`. */
const fakedClock: Clock = { now: () => Date.now() };

const MODULES: Record<SimKind, (ctx: KindContext) => KindModule> = { lock: lockModule, proxy: proxyModule, route: routeModule };

/** An actor runtime whose kinds run a mutated logic. */
class MutantRuntime extends ActorRuntime {
  constructor(
    options: ConstructorParameters<typeof ActorRuntime>[0],
    private readonly mutate: LogicMutation,
  ) {
    super(options);
  }
  override register<S, C extends Command, E extends EventEnvelope>(logic: KindLogic<S, C, E>): KindProjection<S> {
    return super.register(this.mutate(logic));
  }
}

const encoder = new TextEncoder();

/** One incarnation of a service instance. */
export class SimInstance {
  started = false;
  crashed = false;
  constructor(
    readonly name: string,
    readonly view: ScheduledLogView,
    readonly runtime: ActorRuntime,
    private readonly modules: readonly KindModule[],
    private readonly endpoints: ReadonlyMap<string, Endpoint>,
  ) {}

  /** Sends a request body to `kind.op`; a crashed instance never answers (not even a request it took before). */
  async call(kindOp: string, body: unknown): Promise<TurnResult> {
    if (this.crashed) return never();
    const endpoint = this.endpoints.get(kindOp);
    if (endpoint === undefined) throw new Error(`no endpoint ${kindOp}`);
    const result = onTheWire(await endpoint.run(encoder.encode(JSON.stringify(body))));
    return this.crashed ? never() : result;
  }

  async start(): Promise<void> {
    await Promise.all(this.modules.map(async (m) => m.start?.()));
    this.started = true;
  }

  async sweep(): Promise<void> {
    for (const m of this.modules) await m.sweep?.();
  }

  crash(): void {
    this.crashed = true;
    this.view.crash();
  }
}

/** Settings of a simulated cluster. */
export interface SimClusterOptions {
  readonly s: Scheduler;
  readonly plan: FaultPlan;
  readonly kind: SimKind;
  readonly settings?: Partial<ServiceConfig>;
  readonly mutation?: Mutation;
}

/** Instances in numbered slots sharing one log; a slot's instance is replaced when it restarts. */
export class SimCluster {
  readonly log: MemoryEventLog;
  readonly subjects: Subjects;
  readonly config: ServiceConfig;
  private readonly slots: (SimInstance | undefined)[] = [];
  private incarnations = 0;
  /** Instances that were started (crashed ones included), for the report. */
  readonly history: string[] = [];

  constructor(private readonly options: SimClusterOptions) {
    this.config = resolveConfig({ prefix: "sim", ...options.settings });
    this.log = new MemoryEventLog({ now: () => Date.now(), dedupWindowMs: this.config.dedupWindowMs });
    this.subjects = new Subjects(this.config.prefix);
  }

  /** Builds and starts a new instance in `slot` (its start is driven like everything else). */
  async start(slot: number): Promise<SimInstance> {
    const name = `i${slot}.${++this.incarnations}`;
    this.history.push(name);
    const view = new ScheduledLogView(this.log, this.options.s, this.options.plan, name, this.options.mutation?.log);
    const logger = pino({ level: "silent" });
    let msgIds = 0;
    let ids = 0;
    const runtimeOptions = {
      log: view,
      subjects: this.subjects,
      clock: fakedClock,
      logger,
      dedupWindowMs: this.config.dedupWindowMs,
      requestTimeoutMs: this.config.requestTimeoutMs,
      opTimeoutMs: 2000,
      newMsgId: () => `${name}-m${++msgIds}`,
    };
    const mutate = this.options.mutation?.logic;
    const runtime = mutate === undefined ? new ActorRuntime(runtimeOptions) : new MutantRuntime(runtimeOptions, mutate);
    const ctx: KindContext = {
      runtime,
      log: view,
      subjects: this.subjects,
      config: this.config,
      clock: fakedClock,
      logger,
      newId: () => `${name}-lease${++ids}`,
    };
    const modules = [MODULES[this.options.kind](ctx)];
    const endpoints = new Map(modules.flatMap((m) => m.endpoints.map((e) => [`${e.kind}.${e.op}`, e] as const)));
    const instance = new SimInstance(name, view, runtime, modules, endpoints);
    this.slots[slot] = instance;
    await instance.start();
    return instance;
  }

  /** The started, live instance in `slot`, if any (a request to none gets "no responders"). */
  instance(slot: number): SimInstance | undefined {
    const instance = this.slots[slot % this.slots.length];
    return instance !== undefined && instance.started && !instance.crashed ? instance : undefined;
  }

  /** Every live instance. */
  live(): SimInstance[] {
    return this.slots.filter((i): i is SimInstance => i !== undefined && !i.crashed);
  }

  /** Kills the instance in `slot` (nothing it does reaches anyone again) and starts a new one there. */
  async crashAndRestart(slot: number): Promise<void> {
    this.slots[slot]?.crash();
    await this.start(slot);
  }
}

/** A macrotask later (real, not faked): every microtask chain started so far has run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Runs the simulation until `done()`: the scheduler releases scheduled
 * promises (in the order its seed chooses) until none is left; then the
 * faked timers jump to the next deadline. Throws when nothing can move, or
 * when the simulated time passes `horizonMs`.
 */
export async function drive(s: Scheduler, done: () => boolean, horizonMs: number): Promise<void> {
  const start = Date.now();
  for (;;) {
    await s.waitIdle();
    await settle();
    if (s.count() > 0) continue;
    if (done()) return;
    if (vi.getTimerCount() === 0) throw new Error("simulation stuck: work pending, nothing scheduled and no timer set");
    await vi.advanceTimersToNextTimerAsync();
    if (Date.now() - start > horizonMs) throw new Error(`simulation did not finish within ${horizonMs} ms of simulated time`);
  }
}

/** Fake timers for a simulation (Date, performance and timers; microtasks and setImmediate stay real). */
export function useSimTimers(): void {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date", "performance"], now: SIM_T0 });
}

/** Resets the fake timers between runs. */
export function resetSimTimers(): void {
  vi.clearAllTimers();
  vi.setSystemTime(SIM_T0);
}

export { FaultPlan };
