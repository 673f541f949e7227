/** The session endpoints: `session.open|keepalive|close|get`. */
import type { ActorRuntime, Arrival } from "../actors/actor-runtime.ts";
import { answer, endpoint, type Endpoint } from "../transport/endpoint.ts";
import { sessionIdFor } from "./ids.ts";
import { sessionRequests } from "./requests.ts";

/**
 * `session.open|keepalive|close|get`, each for the session actor the request
 * names (`open`: the id the service chooses for it). `get` of a live session
 * adds the locks it holds, sorted (`locksOf`).
 */
export function sessionEndpoints(
  runtime: ActorRuntime,
  { newId, locksOf }: { readonly newId: () => string; readonly locksOf: (session: string, arrival: Arrival) => Promise<readonly string[]> },
): Endpoint[] {
  return [
    endpoint("session", "open", sessionRequests.open, (r, a) =>
      runtime.execute("session", sessionIdFor(r.owner, r.requestId, newId), { op: "open", owner: r.owner, ttlMs: r.ttlMs }, a),
    ),
    endpoint("session", "keepalive", sessionRequests.keepalive, (r, a) => runtime.execute("session", r.id, { op: "keepalive" }, a)),
    endpoint("session", "close", sessionRequests.close, (r, a) => runtime.execute("session", r.id, { op: "close" }, a)),
    endpoint(
      "session",
      "get",
      sessionRequests.get,
      async (r, a) => {
        const result = await runtime.execute("session", r.id, { op: "get" }, a);
        if (!result.ok || (result.reply as { session: unknown }).session === null) return result;
        return answer({ ...(result.reply as object), locks: await locksOf(r.id, a) });
      },
      // Not marked a read: the contract takes every session op as a durable command too.
    ),
  ];
}
