/** The lock's endpoints: `lock.acquire|renew|release|get|reset`, each for the lock the request names. */
import { badRequest } from "../contract/errors.ts";
import { OPERATOR_OP, READS, endpoint, refuse, type Endpoint } from "../transport/endpoint.ts";
import { lockRequests } from "./requests.ts";
import type { LockTurns } from "./turns.ts";
import type { LockWaiters } from "./waiters.ts";

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
    endpoint("lock", "acquire", lockRequests.acquire, async (r, a) => {
      const waitMs = r.waitMs ?? 0;
      if (waitMs > maxWaitMs) return refuse(badRequest(`waitMs: ${waitMs} exceeds the server's --max-wait-ms (${maxWaitMs})`));
      // A durable command has nobody waiting for its answer, so it may not wait.
      if (waitMs > 0 && a.requestedAt !== undefined) {
        return refuse(badRequest("waitMs: a durable command cannot wait (send waitMs 0 or none)"));
      }
      const acquire = { owner: r.owner, ttlMs: r.ttlMs, waitMs, requestId: r.requestId, session: r.session };
      // Without a wait nothing spans turns: one turn of the lock's actor, a repeat of an acquire that joined the queue included.
      return waitMs > 0 ? waiters.acquire(r.name, acquire, a) : turns.execute(r.name, { op: "acquire", ...acquire }, a);
    }),
    endpoint("lock", "renew", lockRequests.renew, (r, a) =>
      turns.execute(r.name, { op: "renew", owner: r.owner, etag: r.etag, ttlMs: r.ttlMs }, a),
    ),
    endpoint("lock", "release", lockRequests.release, (r, a) => turns.execute(r.name, { op: "release", etag: r.etag }, a)),
    endpoint("lock", "get", lockRequests.get, (r, a) => turns.execute(r.name, { op: "get" }, a), READS),
    endpoint("lock", "reset", lockRequests.reset, (r, a) => turns.execute(r.name, { op: "reset" }, a), OPERATOR_OP),
  ];
}
