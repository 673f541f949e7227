/** The lock's endpoints: `lock.acquire|renew|release|get|reset`, each for the lock the request names. */
import { badRequest } from "../contract/errors.ts";
import { OPERATOR_OP, READS, WAITS, endpoint, refuse, type Endpoint, positiveMs, requestBase, requiredId } from "../transport/endpoint.ts";
import type { LockWaiters } from "./waiters.ts";
import { z } from "zod";
import type { ActorRuntime, Arrival } from "../actors/actor-runtime.ts";
import { isInDoubt, unavailableAfter, type TurnResult } from "../actors/actor-runtime.ts";
import { UnreadSessions } from "./unread-sessions.ts";
import type { LockCommand } from "./commands.ts";
import type { KindProjection } from "../projections/kind-projection.ts";
import type { LockState } from "./state.ts";
import { refersToSessions } from "./state.ts";
import type { SessionTable } from "../session/index.ts";
import { freshBy } from "../actors/deadlines.ts";

/** What the lock endpoints need beyond the runtime: lock turns with sessions, the wait queue's runtime side and its ceiling. */
export interface LockAcquireOptions {
  readonly turns: LockTurns;
  readonly waiters: LockWaiters;
  /** The server's `--max-wait-ms`: a larger `waitMs` is BAD_REQUEST. */
  readonly maxWaitMs: number;
}

/**
 * `lock.acquire|renew|release|get|reset`, each for the lock actor named in
 * the request; an acquire with a `waitMs` goes through the lock waiters,
 * which park it when it joins the lock's wait queue, and one without is a
 * single turn of the lock's actor.
 */
export function lockEndpoints({ turns, waiters, maxWaitMs }: LockAcquireOptions): Endpoint[] {
  return [
    endpoint(
      "lock",
      "acquire",
      lockRequests.acquire,
      async (r, a) => {
        const waitMs = r.waitMs ?? 0;
        if (waitMs > maxWaitMs) return refuse(badRequest(`waitMs: ${waitMs} exceeds the server's --max-wait-ms (${maxWaitMs})`));
        // A durable command has nobody waiting for its answer, so it may not wait.
        if (waitMs > 0 && a.requestedAt !== undefined) {
          return refuse(badRequest("waitMs: a durable command cannot wait (send waitMs 0 or none)"));
        }
        const acquire = { owner: r.owner, ttlMs: r.ttlMs, waitMs, requestId: r.requestId, session: r.session };
        // Without a wait nothing spans turns: one turn of the lock's actor, a repeat of an acquire that joined the queue included.
        return waitMs > 0 ? waiters.acquire(r.name, acquire, a) : turns.execute(r.name, { op: "acquire", ...acquire }, a);
      },
      WAITS,
    ),
    endpoint("lock", "renew", lockRequests.renew, (r, a) =>
      turns.execute(r.name, { op: "renew", owner: r.owner, etag: r.etag, ttlMs: r.ttlMs }, a),
    ),
    endpoint("lock", "release", lockRequests.release, (r, a) => turns.execute(r.name, { op: "release", etag: r.etag }, a)),
    endpoint("lock", "get", lockRequests.get, (r, a) => turns.execute(r.name, { op: "get" }, a), READS),
    endpoint("lock", "reset", lockRequests.reset, (r, a) => turns.execute(r.name, { op: "reset" }, a), OPERATOR_OP),
  ];
}

/* Request schemas of the lock endpoints (docs/protocol.md, Locks). */

const etag = z.string().min(1).max(256);

/** How long a blocking acquire may wait; the ceiling is the server's `--max-wait-ms`, checked by the endpoint. */
const waitMs = z.number().int().min(0);

/** `lock.<op>` request schemas, by op. */
export const lockRequests = {
  acquire: requestBase
    .extend({
      name: requiredId,
      owner: requiredId,
      ttlMs: positiveMs.optional(),
      session: requiredId.optional(),
      waitMs: waitMs.optional(),
    })
    // 1.2 sessions: a session lease's TTL is its session's, so a TTL of its own would be ignored silently.
    .refine((r) => r.session === undefined || r.ttlMs === undefined, {
      message: "must not be given with session (a session lease's TTL is the session's)",
      path: ["ttlMs"],
    }),
  renew: requestBase.extend({ name: requiredId, owner: requiredId, etag, ttlMs: positiveMs.optional() }),
  release: requestBase.extend({ name: requiredId, etag }),
  get: requestBase.extend({ name: requiredId }),
  reset: requestBase.extend({ name: requiredId }),
};

/*
 * Lock commands as the application carries them out (with sessions): each
 * turn of a lock's actor carries the session table, so that its decision
 * reads the ends of the sessions its lease and waiters hang on as data and
 * stays pure, as a route's decision reads the host table. A decision that
 * reads sessions reads the table caught up with the stream, so a keepalive
 * or a close acknowledged by any instance is seen; one that does not (no
 * session named, none on the lock) waits for nothing
 * (src/lock/unread-sessions.ts).
 */

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
    const named = (command.op === "acquire" || command.op === "claim") && command.session !== undefined;
    const known = this.locks.find(name);
    if (named || (known !== undefined && refersToSessions(known))) return this.withSessionsCaughtUp(sessions, name, command, arrival);
    // Before any session exists none can be read; after, nothing the decision reads hangs on one as far as this
    // instance knows, so it does not wait for the table. If the lock's state at its turn does (another instance's event,
    // folded on a conflict), the decision asks the table and is refused, and runs again with the table caught up.
    if (!sessions.inUse) return runtime.execute("lock", name, command, arrival);
    const unread = new UnreadSessions();
    const result = await runtime.execute("lock", name, { ...command, sessions: unread }, arrival);
    // In doubt, the refused turn's earlier append may still land: its answer is the doubt, as for any lost ack.
    if (!unread.asked || isInDoubt(result)) return result;
    return this.withSessionsCaughtUp(sessions, name, command, arrival);
  }

  /** The turn with the session table caught up with the stream first (one batched read), so that any instance's keepalive or close is seen. */
  private async withSessionsCaughtUp(
    sessions: SessionTable<LockState>,
    name: string,
    command: LockCommand,
    arrival: Arrival,
  ): Promise<TurnResult> {
    const { runtime } = this;
    const a = runtime.deadlineFor(arrival);
    try {
      await freshBy(sessions, runtime, a.deadline);
    } catch (e) {
      return unavailableAfter(e);
    }
    return runtime.execute("lock", name, { ...command, sessions }, a);
  }
}
