/** The lock endpoints (`lock.acquire|renew|release|get|reset`). */
import type { ActorHost } from "../actors/index.ts";
import { actorEndpoint, type CommandEndpoint } from "./command-endpoint.ts";
import { lockRequests } from "./lock-requests.ts";

/** Every lock endpoint, routed to the lock actor named in the request. */
export function lockEndpoints(host: ActorHost): CommandEndpoint[] {
  return [
    actorEndpoint(host, "lock", "acquire", lockRequests.acquire, (r) => ({
      kind: "lock",
      id: r.name,
      command: { op: "acquire", owner: r.owner, ttlMs: r.ttlMs },
    })),
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
