/**
 * The route endpoints (`route.acquire|move|candidates|pin|unpin|release|get|snapshot`).
 *
 * `route.acquire` spans actors: it first catches the host and route tables
 * up with the stream (read-your-writes across instances), then hands the
 * route actor a command carrying the host table and the loads its chooser
 * needs, so the decision is pure. A failed acquire then records its new
 * candidates with a second turn (see {@link routeEndpoints}).
 */
import {
  isAdmissionNeeded,
  systemClock,
  unavailable,
  type AcquireRoute,
  type ActorHost,
  type Clock,
  type GrantedAdmission,
  type RecordSeen,
  type RouteCommand,
  type RouteSettings,
  type TurnResult,
} from "../actors/index.ts";
import { routeLeaseView, sortedLeases, compareCodeUnits, type HostTable, type RouteTable } from "../projections/index.ts";
import type { CommandEndpoint, RunOptions } from "./command-endpoint.ts";
import { HostAdmissions } from "./host-admissions.ts";
import { placementReadEndpoint, placementUnavailable } from "./host-endpoints.ts";
import { routeRequests } from "./route-requests.ts";
import { parseRequest } from "./validation.ts";
import type { z } from "zod";

/** Decisions of one `route.acquire` beyond its first, when capped hosts turn out full or the route moves meanwhile. */
const MAX_CAPACITY_ROUNDS = 8;

/** Every route endpoint. */
export function routeEndpoints(
  host: ActorHost,
  hosts: HostTable,
  routes: RouteTable,
  settings: RouteSettings,
  clock: Clock = systemClock,
): CommandEndpoint[] {
  const order = new ArrivalOrder();
  const admissions = new HostAdmissions(host, hosts, routes, clock);

  /** An endpoint whose requests go to the route actor named in the request, in arrival order. */
  const routeEndpoint = <Req extends { route: string; requestId?: string | undefined }>(
    op: string,
    schema: z.ZodType<Req>,
    commandOf: (request: Req) => RouteCommand,
  ): CommandEndpoint => ({
    kind: "route",
    op,
    run(data: Uint8Array, options?: RunOptions): Promise<TurnResult> {
      const request = parse(schema, data);
      if (!request.ok) return Promise.resolve(request.result);
      const r = request.value;
      return order.enter(r.route, undefined, () => host.execute("route", r.route, commandOf(r), r.requestId, options?.requestedAt));
    },
  });

  const acquire: CommandEndpoint = {
    kind: "route",
    op: "acquire",
    async run(data, options) {
      const request = parse(routeRequests.acquire, data);
      if (!request.ok) return request.result;
      const r = request.value;
      const requestedAt = options?.requestedAt;
      // Health must be read-your-writes across instances; the route's own
      // history is checked by its actor (expected sequence), and loads only
      // order the candidates, so the route table is not waited for here
      // (a capped host's admission waits for it: there the count matters).
      const ready = hosts.fresh();
      const result = await order.enter(r.route, ready, async () => {
        const full = new Set<string>();
        let admission: GrantedAdmission | undefined;
        let refreshed = false;
        for (let round = 0; ; round++) {
          const command: AcquireRoute = {
            op: "acquire",
            fp: r.fp,
            model: r.model,
            candidates: r.candidates,
            hosts: hosts.snapshot(),
            // The table's own map, read when the actor decides (no copy per request); hosts without leases are absent (0).
            // Every chooser reads it for capacity (a capped host at its cap is skipped); only least-loaded orders by it.
            loads: routes.activeByHost(),
            recordReuse: r.requestId !== undefined,
            ...(full.size === 0 ? {} : { full: new Set(full) }),
            ...(admission === undefined ? {} : { admission }),
          };
          // The first round enters the actor's mailbox synchronously: arrival order is kept.
          const decided = await host.execute("route", r.route, command, r.requestId, requestedAt);
          if (!decided.ok && decided.rejection.details?.["full"] !== undefined && !refreshed) {
            // Full by the route table's loads, which are not waited for: look again once they are current
            // (a lease released through another instance a moment ago frees its slot here too).
            refreshed = true;
            try {
              await routes.fresh();
            } catch (e) {
              return placementUnavailable(e);
            }
            continue;
          }
          if (!decided.ok || !isAdmissionNeeded(decided.reply)) return decided;
          if (round >= MAX_CAPACITY_ROUNDS) return unavailable(`route ${r.route} kept moving while its host admitted a lease`, 100);
          const need = decided.reply;
          admission = undefined;
          let outcome;
          try {
            outcome = await admissions.admit(need.admit, { route: r.route, fp: r.fp, model: r.model, routeSeq: need.routeSeq });
          } catch (e) {
            return placementUnavailable(e);
          }
          if (outcome.kind === "failed") return outcome.result;
          if (outcome.kind === "full") full.add(need.admit);
          if (outcome.kind === "admitted") admission = { host: need.admit, seq: outcome.seq, routeSeq: need.routeSeq };
        }
      });
      if (result.ok || r.candidates.length === 0) return result;
      const { code } = result.rejection;
      if (code !== "NO_HOST" && code !== "PINNED_DOWN") return result;
      // Whatever the table holds is already in the stream: nothing to record then (the usual case for a retry).
      const known = routes.get(r.route).seen;
      if (r.candidates.every((c) => known.has(c))) return result;
      // The contract records a failed acquire's new candidates: one more turn,
      // under its own op so its message id never shadows a later successful
      // acquire with the same requestId (a failed command is decided again).
      const record: RecordSeen = { op: "seen", hosts: r.candidates };
      const seen = await host.execute("route", r.route, record, r.requestId, requestedAt);
      return seen.ok ? result : seen;
    },
  };

  return [
    acquire,
    routeEndpoint("move", routeRequests.move, (r) => ({ op: "move", fp: r.fp, model: r.model, host: r.host })),
    routeEndpoint("candidates", routeRequests.candidates, (r) => ({ op: "candidates", hosts: r.hosts })),
    routeEndpoint("pin", routeRequests.pin, (r) => ({ op: "pin", host: r.host })),
    routeEndpoint("unpin", routeRequests.unpin, () => ({ op: "unpin" })),
    routeEndpoint("release", routeRequests.release, () => ({ op: "release" })),
    placementReadEndpoint("route", "get", routeRequests.get, async (r) => {
      await routes.fresh();
      const state = routes.get(r.route);
      return { pinned: state.pinned, leases: sortedLeases(state).map((l) => routeLeaseView(r.route, l)) };
    }),
    placementReadEndpoint("route", "snapshot", routeRequests.snapshot, async () => {
      await routes.fresh();
      const all = [...routes.routes()].sort(([a], [b]) => compareCodeUnits(a, b));
      return { leases: all.flatMap(([route, state]) => sortedLeases(state).map((l) => routeLeaseView(route, l))) };
    }),
  ];
}

function parse<Req>(schema: z.ZodType<Req>, data: Uint8Array): { ok: true; value: Req } | { ok: false; result: TurnResult } {
  const request = parseRequest(schema, data);
  return request.ok ? request : { ok: false, result: { ok: false, rejection: request.rejection } };
}

/**
 * Keeps each route's commands entering its actor's mailbox in the order they
 * arrived, although `route.acquire` first waits for the read models: the
 * durable command consumer relies on arrival order per actor. A command with
 * nothing to wait for and nobody ahead of it enters at once (synchronously).
 */
class ArrivalOrder {
  private readonly tails = new Map<string, Promise<void>>();

  enter(id: string, ready: Promise<unknown> | undefined, go: () => Promise<TurnResult>): Promise<TurnResult> {
    const ahead = this.tails.get(id);
    if (ahead === undefined && ready === undefined) return go();
    let entered!: () => void;
    const mine = new Promise<void>((resolve) => (entered = resolve));
    this.tails.set(id, mine);
    // Handled below; this only keeps a failure that comes before our turn from counting as unhandled.
    void ready?.catch(() => undefined);
    const run = async (): Promise<TurnResult> => {
      let turn: Promise<TurnResult>;
      try {
        await ahead;
        await ready;
        turn = go();
      } catch (e) {
        turn = Promise.resolve(placementUnavailable(e));
      } finally {
        // Entered the mailbox (or failed): the next command of this route may follow.
        entered();
        if (this.tails.get(id) === mine) this.tails.delete(id);
      }
      return turn;
    };
    return run();
  }
}
