/**
 * The lock kind in a service instance: its actors (and their projection), the
 * waiting acquires' runtime, the sessions locks hang on and the table
 * their decisions read, and endpoints.
 */
import { LockWaiters, clientShareOfWaiting } from "./waiters.ts";
import { LockTurns } from "./endpoints.ts";
import { freshBy } from "../actors/deadlines.ts";
import { SessionTable } from "../session/index.ts";
import { lockLogic } from "./logic.ts";
import { sessionHolding } from "./state.ts";
import { sessionLogic } from "../session/index.ts";
import { lockEndpoints } from "./endpoints.ts";
import { sessionEndpoints } from "../session/index.ts";
import type { KindContext, KindModule } from "../transport/kind-module.ts";

/** Registers the lock actors with the runtime and returns the lock endpoints. */
export function lockModule(ctx: KindContext): KindModule {
  const { config, runtime } = ctx;
  const projection = runtime.register(
    lockLogic({
      lockTtlMs: config.lockTtlMs,
      maxTtlMs: config.maxTtlMs,
      claimWindowMs: config.claimWindowMs,
      maxWaiters: config.maxWaiters,
    }),
  );
  const sessions = runtime.register(sessionLogic({ lockTtlMs: config.lockTtlMs, maxTtlMs: config.maxTtlMs }));
  const table = new SessionTable(sessions, projection, sessionHolding);
  const turns = new LockTurns(runtime, projection, table);
  const waiters = new LockWaiters({
    runtime,
    projection,
    clock: ctx.clock,
    logger: ctx.logger,
    turns,
    maxWaiting: config.maxWaitingAcquires,
    maxWaitingPerClient: clientShareOfWaiting(config.maxWaitingAcquires, config.maxWaiters),
  });
  // The locks a live session holds: read once the lock projection has caught up, within the request's deadline.
  const locksOf = async (id: string, arrival: Parameters<typeof runtime.deadlineFor>[0]) => {
    await freshBy(projection, runtime, runtime.deadlineFor(arrival).deadline);
    return table.locksOf(id);
  };
  return {
    endpoints: [
      ...lockEndpoints({ turns, waiters, maxWaitMs: config.maxWaitMs }),
      ...sessionEndpoints(runtime, { newId: ctx.newId, locksOf }),
    ],
    start: async () => {
      await Promise.all([projection.start(), sessions.start()]);
    },
    sweep: () => {
      projection.pruneReplies(ctx.clock.now());
      sessions.pruneReplies(ctx.clock.now());
      return Promise.resolve();
    },
    // Parked acquires are answered UNAVAILABLE first, so that stopping does not wait for their waits to end.
    stopping: () => waiters.stop(),
    stop: () => {
      waiters.stop();
      return Promise.all([projection.stop(), sessions.stop()]).then(() => undefined);
    },
  };
}
