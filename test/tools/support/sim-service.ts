/**
 * A whole leasehold service in memory: the real actor runtime and the real lock,
 * proxy and route modules (deciders, selector, read models, endpoints,
 * sweeps) on a {@link MemoryEventLog} and a {@link ManualClock}. Requests go
 * through the endpoints as JSON bytes, so what it writes is exactly what the
 * service writes: a valid history, produced quickly.
 */
import { pino } from "pino";
import { ActorRuntime } from "../../../src/actors/actor-runtime.ts";
import { ManualClock } from "../../../src/actors/clock.ts";
import { type TurnResult } from "../../../src/actors/actor-runtime.ts";
import { lockModule } from "../../../src/lock/module.ts";
import { proxyModule } from "../../../src/proxy/module.ts";
import { routeModule } from "../../../src/route/module.ts";
import type { Endpoint } from "../../../src/transport/endpoint.ts";
import { resolveConfig, type ServiceConfig } from "../../../src/config.ts";
import { MemoryEventLog } from "../../../src/events/memory-event-log.ts";
import { Subjects } from "../../../src/contract/subjects.ts";
import type { KindModule } from "../../../src/transport/kind-module.ts";
import type { ProjectionSnapshotStore } from "../../../src/projections/snapshot-stores.ts";
import { onTheWire } from "../../support/on-the-wire.ts";

/** The instant simulations start at. */
export const SIM_T0 = Date.parse("2026-03-01T00:00:00.000Z");

/** An in-memory service. */
export interface SimService {
  readonly clock: ManualClock;
  readonly log: MemoryEventLog;
  readonly subjects: Subjects;
  readonly config: ServiceConfig;
  /** Sends `body` to the `kind.op` endpoint. */
  call(kindOp: string, body: unknown): Promise<TurnResult>;
  /** Runs every module's sweep once. */
  sweep(): Promise<void>;
  stop(): Promise<void>;
}

const encoder = new TextEncoder();

/** What a service started again runs over: the log (and snapshots) an earlier one left. */
export interface SimState {
  readonly log?: MemoryEventLog;
  readonly snapshots?: ProjectionSnapshotStore;
}

/** Starts an in-memory service with the given settings (prefix `sim` unless given), over a new log unless given one. */
export async function startSimService(
  settings: Partial<ServiceConfig> = {},
  clock = new ManualClock(SIM_T0),
  over: SimState = {},
): Promise<SimService> {
  const config = resolveConfig({ prefix: "sim", ...settings });
  const log = over.log ?? new MemoryEventLog({ now: () => clock.now(), dedupWindowMs: config.dedupWindowMs });
  const subjects = new Subjects(config.prefix);
  const logger = pino({ level: "silent" });
  let ids = 0;
  let msgIds = 0;
  const runtime = new ActorRuntime({
    ...{ log, subjects, clock, logger, dedupWindowMs: config.dedupWindowMs, newMsgId: () => `m${++msgIds}` },
    ...(over.snapshots === undefined ? {} : { snapshots: over.snapshots }),
  });
  const ctx = { runtime, log, subjects, config, clock, logger, newId: () => `lease-${++ids}` };
  const modules: KindModule[] = [lockModule(ctx), proxyModule(ctx), routeModule(ctx)];
  for (const m of modules) await m.start?.();
  const endpoints = new Map<string, Endpoint>(modules.flatMap((m) => m.endpoints.map((e) => [`${e.kind}.${e.op}`, e] as const)));
  return {
    clock,
    log,
    subjects,
    config,
    call(kindOp, body) {
      const endpoint = endpoints.get(kindOp);
      if (endpoint === undefined) throw new Error(`no endpoint ${kindOp}`);
      return endpoint.run(encoder.encode(JSON.stringify(body))).then(onTheWire);
    },
    async sweep() {
      for (const m of modules) await m.sweep?.();
    },
    async stop() {
      await runtime.drain();
      for (const m of modules) await m.stop?.();
    },
  };
}
