/** The lock endpoints (`lock.acquire|renew|release|get|reset`). */
import type { ActorHost } from "../actors/index.ts";
import type { LockWaiters } from "../actors/lock/lock-waiters.ts";
import { actorEndpoint, type CommandEndpoint } from "./command-endpoint.ts";
import { badRequest } from "./errors.ts";
import { lockRequests } from "./lock-requests.ts";
import { parseRequest } from "./validation.ts";

/** What the acquire endpoint needs beyond the runtime: the wait queue's runtime side and its ceiling. */
export interface LockAcquireOptions {
  readonly waiters: LockWaiters;
  /** The server's `--max-wait-ms`: a larger `waitMs` is BAD_REQUEST. */
  readonly maxWaitMs: number;
}

/** Every lock endpoint, routed to the lock actor named in the request. */
export function lockEndpoints(host: ActorHost, acquire: LockAcquireOptions): CommandEndpoint[] {
  return [
    acquireEndpoint(acquire),
    actorEndpoint(host, "lock", "renew", lockRequests.renew, (r) => ({
      kind: "lock",
      id: r.name,
      command: { op: "renew", owner: r.owner, etag: r.etag, ttlMs: r.ttlMs },
    })),
    actorEndpoint(host, "lock", "release", lockRequests.release, (r) => ({
      kind: "lock",
      id: r.name,
      command: { op: "release", etag: r.etag },
    })),
    actorEndpoint(host, "lock", "get", lockRequests.get, (r) => ({ kind: "lock", id: r.name, command: { op: "get" } })),
    actorEndpoint(host, "lock", "reset", lockRequests.reset, (r) => ({ kind: "lock", id: r.name, command: { op: "reset" } })),
  ];
}

/** `lock.acquire`: every acquire goes through the lock waiters, which park it when it joins the queue. */
function acquireEndpoint({ waiters, maxWaitMs }: LockAcquireOptions): CommandEndpoint {
  return {
    kind: "lock",
    op: "acquire",
    run(data, options) {
      const request = parseRequest(lockRequests.acquire, data);
      if (!request.ok) return Promise.resolve({ ok: false, rejection: request.rejection });
      const r = request.value;
      const waitMs = r.waitMs ?? 0;
      if (waitMs > maxWaitMs) {
        return Promise.resolve({ ok: false, rejection: badRequest(`waitMs: ${waitMs} exceeds the server's --max-wait-ms (${maxWaitMs})`) });
      }
      // Only the durable command consumer passes `requestedAt`: nobody waits for the answer there, so nothing may wait.
      if (waitMs > 0 && options?.requestedAt !== undefined) {
        return Promise.resolve({ ok: false, rejection: badRequest("waitMs: a durable command cannot wait (send waitMs 0 or none)") });
      }
      return waiters.acquire(r.name, { owner: r.owner, ttlMs: r.ttlMs, waitMs, requestId: r.requestId }, options?.requestedAt);
    },
  };
}
