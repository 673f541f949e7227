/**
 * Lock turns once sessions are in use (src/lock/endpoints.ts, LockTurns;
 * src/lock/unread-sessions.ts): a command that names no session, on a lock
 * hanging on none, does not wait for the session table to catch up with the
 * stream; one that names a session, or whose lock hangs on one, does; and a
 * lock that turns out to hang on a session only at its turn (this instance's
 * view of it was behind) is decided again with the table caught up.
 */
import { pino } from "pino";
import { describe, expect, it, vi } from "vitest";
import { ActorRuntime, type TurnResult } from "../../src/actors/actor-runtime.ts";
import { ManualClock } from "../../src/actors/clock.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { LockTurns } from "../../src/lock/endpoints.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import { sessionHolding } from "../../src/lock/state.ts";
import { SessionTable, sessionLogic } from "../../src/session/index.ts";
import { DEFAULT_SETTINGS } from "../support/lock-given.ts";

const logger = pino({ level: "silent" });

async function lockService() {
  const clock = new ManualClock();
  const log = new MemoryEventLog({ now: () => clock.now(), dedupWindowMs: 120_000 });
  const runtime = new ActorRuntime({ log, subjects: new Subjects("t"), clock, logger, dedupWindowMs: 120_000 });
  const locks = runtime.register(lockLogic(DEFAULT_SETTINGS));
  const sessions = runtime.register(sessionLogic({ lockTtlMs: DEFAULT_SETTINGS.lockTtlMs, maxTtlMs: DEFAULT_SETTINGS.maxTtlMs }));
  await Promise.all([locks.start(), sessions.start()]);
  const table = new SessionTable(sessions, locks, sessionHolding);
  const turns = new LockTurns(runtime, locks, table);
  const fresh = vi.spyOn(table, "fresh");
  const open = async (owner: string): Promise<string> => {
    const result = await runtime.execute("session", `s-${owner}`, { op: "open", owner });
    expect(result.ok).toBe(true);
    return `s-${owner}`;
  };
  const close = async (id: string) => expect((await runtime.execute("session", id, { op: "close" })).ok).toBe(true);
  return { log, locks, table, turns, fresh, open, close };
}

function leaseOf(result: TurnResult): { owner: string; generation: number; etag: string; session?: string } {
  if (!result.ok) throw new Error(`expected a lease, got ${result.rejection.code}: ${result.rejection.message}`);
  return (result.reply as { lease: { owner: string; generation: number; etag: string; session?: string } }).lease;
}

describe("lock turns with a session open", () => {
  it("carry out a lock pair that names no session without catching the session table up", async () => {
    const s = await lockService();
    await s.open("w");
    expect(s.table.inUse).toBe(true);
    const lease = leaseOf(await s.turns.execute("x", { op: "acquire", owner: "a" }));
    expect(await s.turns.execute("x", { op: "release", etag: lease.etag })).toMatchObject({ ok: true });
    expect(leaseOf(await s.turns.execute("x", { op: "acquire", owner: "b" }))).toMatchObject({ owner: "b", generation: 2 });
    expect(s.fresh).not.toHaveBeenCalled();
  });

  it("catch the table up for a command that names a session, and for a lock that hangs on one", async () => {
    const s = await lockService();
    const session = await s.open("w");
    expect(leaseOf(await s.turns.execute("x", { op: "acquire", owner: "w", session }))).toMatchObject({ session });
    expect(s.fresh).toHaveBeenCalledTimes(1);
    await s.close(session);
    // The lock's lease hangs on the closed session: the table is read, and the lock is free.
    expect(leaseOf(await s.turns.execute("x", { op: "acquire", owner: "b" }))).toMatchObject({ owner: "b", generation: 2 });
    expect(s.fresh).toHaveBeenCalledTimes(2);
  });

  it("decide again with the table caught up when the lock hangs on a session only at its turn", async () => {
    const s = await lockService();
    const session = await s.open("w");
    leaseOf(await s.turns.execute("x", { op: "acquire", owner: "w", session }));
    await s.close(session);
    const events = s.log.messages.length;
    // This instance's view of the lock is behind (another instance's session lease, not yet folded here): free.
    vi.spyOn(s.locks, "find").mockReturnValueOnce(undefined);
    // Willing to wait: a decision on the lease as the lock's history alone has it (held) would queue the request.
    const lease = leaseOf(await s.turns.execute("x", { op: "acquire", owner: "b", waitMs: 5000, requestId: "b1" }, { requestId: "b1" }));
    // The turn found the session lease, asked for the session's end, and ran again once the table had caught up:
    // the lock is granted, one event appended and no place in a queue.
    expect(s.fresh).toHaveBeenCalledTimes(2);
    expect(lease).toMatchObject({ owner: "b", generation: 2 });
    expect(s.log.messages).toHaveLength(events + 1);
  });

  it("answer a lock held under a live session as held, whichever way the turn learnt of it", async () => {
    const s = await lockService();
    const session = await s.open("w");
    leaseOf(await s.turns.execute("x", { op: "acquire", owner: "w", session }));
    vi.spyOn(s.locks, "find").mockReturnValueOnce(undefined);
    expect(await s.turns.execute("x", { op: "acquire", owner: "b" })).toMatchObject({ ok: false, rejection: { code: "LEASE_EXISTS" } });
  });
});
