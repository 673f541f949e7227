/**
 * One way per request (src/service/endpoints.ts#lockEndpoints): a `lock.acquire`
 * without `waitMs` is one turn of the lock's actor and never reaches the lock
 * waiters, even when it repeats the `requestId` of an acquire that joined the
 * queue and is parked: its turn finds that place and answers the lock or
 * LEASE_EXISTS, appending nothing but a grant.
 */
import { pino } from "pino";
import { describe, expect, it, vi } from "vitest";
import { ActorRuntime } from "../../src/actors/actor-runtime.ts";
import { ManualClock } from "../../src/actors/clock.ts";
import type { TurnResult } from "../../src/actors/actor-runtime.ts";
import { lockEndpoints } from "../../src/lock/endpoints.ts";
import { LockWaiters } from "../../src/lock/waiters.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import { LockTurns } from "../../src/lock/endpoints.ts";
import { isWaitingReply } from "../../src/lock/logic.ts";
import { DEFAULT_SETTINGS } from "../support/lock-given.ts";

const logger = pino({ level: "silent" });
const NAME = "queued";

async function lockService() {
  const clock = new ManualClock();
  const log = new MemoryEventLog({ now: () => clock.now(), dedupWindowMs: 120_000 });
  const runtime = new ActorRuntime({ log, subjects: new Subjects("t"), clock, logger, dedupWindowMs: 120_000 });
  const projection = runtime.register(lockLogic({ ...DEFAULT_SETTINGS, claimWindowMs: 1000 }));
  await projection.start();
  const waiters = new LockWaiters({ runtime, projection, clock, logger });
  const turns = new LockTurns(runtime, projection);
  const acquire = lockEndpoints({ turns, waiters, maxWaitMs: 60_000 }).find((e) => e.op === "acquire")!;
  const send = (body: object): Promise<TurnResult> => acquire.run(new TextEncoder().encode(JSON.stringify(body)));
  const waitersAcquire = vi.spyOn(waiters, "acquire");
  return { clock, log, runtime, send, waitersAcquire };
}

function leaseOf(result: TurnResult): { owner: string; generation: number } {
  if (!result.ok) throw new Error(`expected a lease, got ${result.rejection.code}`);
  return (result.reply as { lease: { owner: string; generation: number } }).lease;
}

describe("lock.acquire without waitMs", () => {
  it("repeating a parked acquire's requestId is one turn: LEASE_EXISTS while the lock is held, the lock once its place may claim it", async () => {
    const s = await lockService();
    leaseOf(await s.send({ name: NAME, owner: "holder", ttlMs: 10_000 }));
    // w2 joins the queue (the one turn a waiting acquire takes before it is parked).
    const joined = await s.runtime.execute(
      "lock",
      NAME,
      { op: "acquire", owner: "w2", waitMs: 20_000, requestId: "w2-request" },
      {
        requestId: "w2-request",
      },
    );
    expect(joined.ok && isWaitingReply(joined.reply)).toBe(true);
    const events = s.log.messages.length;

    const refused = await s.send({ name: NAME, owner: "w2", requestId: "w2-request" });
    expect(refused).toMatchObject({ ok: false, rejection: { code: "LEASE_EXISTS" } });
    expect(s.log.messages).toHaveLength(events);

    // The holder's lease ends: the place heads the queue and may claim the lock in its window.
    s.clock.advance(10_001);
    const lease = leaseOf(await s.send({ name: NAME, owner: "w2", requestId: "w2-request" }));
    expect(lease).toMatchObject({ owner: "w2", generation: 2 });
    expect(s.log.messages).toHaveLength(events + 1);
    // The grant is what the requestId answers from now on, the same lease again and nothing appended.
    expect(leaseOf(await s.send({ name: NAME, owner: "w2", requestId: "w2-request" }))).toEqual(lease);
    expect(s.log.messages).toHaveLength(events + 1);
    expect(s.waitersAcquire).not.toHaveBeenCalled();
  });

  it("goes through the lock waiters only with a waitMs", async () => {
    const s = await lockService();
    leaseOf(await s.send({ name: NAME, owner: "holder" }));
    expect(await s.send({ name: NAME, owner: "other", waitMs: 0 })).toMatchObject({ ok: false, rejection: { code: "LEASE_EXISTS" } });
    expect(s.waitersAcquire).not.toHaveBeenCalled();
  });
});
