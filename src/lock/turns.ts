/**
 * Lock commands as the application carries them out (1.2 sessions): each
 * turn of a lock's actor carries the session table, so that its decision
 * reads the ends of the sessions its lease and waiters hang on as data and
 * stays pure, as a route's decision reads the host table. The table is first
 * caught up with the stream once sessions are in use, so a keepalive or a
 * close acknowledged by any instance is seen.
 */
import type { ActorRuntime, Arrival } from "../actors/actor-runtime.ts";
import { unavailableAfter, type TurnResult } from "../actors/turn-result.ts";
import type { LockCommand } from "./commands.ts";
import type { KindProjection } from "../projections/kind-projection.ts";
import type { LockState } from "./state.ts";
import { refersToSessions } from "./session-waiters.ts";
import type { SessionTable } from "../session/index.ts";
import { freshBy } from "../actors/deadlines.ts";

/** Runs lock commands with the session table. */
export class LockTurns {
  constructor(
    private readonly runtime: ActorRuntime,
    private readonly locks: KindProjection<LockState>,
    /** The sessions; without them (no session kind), commands run as they are. */
    readonly sessions?: SessionTable<LockState>,
  ) {}

  /** One turn of the lock actor `name`. */
  async execute(name: string, command: LockCommand, arrival: Arrival = {}): Promise<TurnResult> {
    const { sessions, runtime } = this;
    if (sessions === undefined) return runtime.execute("lock", name, command, arrival);
    // The lock's projected state may be behind another instance's session lease: with sessions in use, every
    // command reads them caught up (one batched read); without, none waits.
    const named = (command.op === "acquire" || command.op === "claim") && command.session !== undefined;
    if (!named && !sessions.inUse && !refersToSessions(this.locks.get(name))) return runtime.execute("lock", name, command, arrival);
    const a = runtime.deadlineFor(arrival);
    try {
      await freshBy(sessions, runtime, a.deadline);
    } catch (e) {
      return unavailableAfter(e);
    }
    return runtime.execute("lock", name, { ...command, sessions }, a);
  }
}
