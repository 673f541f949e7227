/** The host endpoints (`host.set`, `host.list`). */
import type { z } from "zod";
import type { ActorHost, TurnResult } from "../actors/index.ts";
import { LogUnavailableError } from "../events/index.ts";
import { compareCodeUnits, type HostTable, type RouteTable } from "../projections/index.ts";
import { actorEndpoint, type CommandEndpoint } from "./command-endpoint.ts";
import { hostRequests } from "./host-requests.ts";
import { parseRequest } from "./validation.ts";

/** One entry of `host.list`. */
export interface HostListEntry {
  readonly host: string;
  readonly healthy: boolean;
  readonly draining: boolean;
  /** The cap on new route leases, null when unlimited (1.1). */
  readonly maxLeases: number | null;
  /** Active route leases on the host, all routes. */
  readonly active: number;
}

/** Every host endpoint; `host.list` reads the host and route tables after catching up with the stream. */
export function hostEndpoints(host: ActorHost, hosts: HostTable, routes: RouteTable): CommandEndpoint[] {
  return [
    actorEndpoint(host, "host", "set", hostRequests.set, (r) => ({
      kind: "host",
      id: r.host,
      command: { op: "set", healthy: r.healthy, draining: r.draining, maxLeases: r.maxLeases ?? null },
    })),
    placementReadEndpoint("host", "list", hostRequests.list, async () => {
      await Promise.all([hosts.fresh(), routes.fresh()]);
      const list: HostListEntry[] = [...hosts.snapshot().values()]
        .filter((h) => h.set)
        .sort((a, b) => compareCodeUnits(a.host, b.host))
        .map((h) => ({
          host: h.host,
          healthy: h.healthy,
          draining: h.draining,
          maxLeases: h.maxLeases,
          active: routes.activeOn(h.host),
        }));
      return { hosts: list };
    }),
  ];
}

/** An endpoint answered from read models; a stream that cannot be read is UNAVAILABLE (it never throws). */
export function placementReadEndpoint<Req>(
  kind: string,
  op: string,
  schema: z.ZodType<Req>,
  answer: (request: Req) => Promise<unknown>,
): CommandEndpoint {
  return {
    kind,
    op,
    async run(data): Promise<TurnResult> {
      const request = parseRequest(schema, data);
      if (!request.ok) return { ok: false, rejection: request.rejection };
      try {
        return { ok: true, reply: await answer(request.value) };
      } catch (e) {
        return placementUnavailable(e);
      }
    },
  };
}

/** The contract's answer when the stream could not be read or written in time. */
export function placementUnavailable(e: unknown): TurnResult {
  const why = e instanceof LogUnavailableError ? e.message : `unexpected failure: ${(e as Error).message}`;
  return { ok: false, rejection: { code: "UNAVAILABLE", message: `the event stream could not be read in time: ${why}` } };
}
