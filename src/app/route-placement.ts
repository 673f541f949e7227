/**
 * Route placement, the commands of route actors as the application carries
 * them out: every command of one route enters its actor's mailbox in the
 * order it arrived (the durable command consumer relies on it), although an
 * acquire first waits for the host table.
 *
 * `acquire` spans actors: it catches the host table up with the stream
 * (health is read-your-writes across instances), then hands the route actor
 * a command carrying the host table and the loads its chooser needs, so the
 * decision is pure. The route's own history is checked by its actor
 * (expected sequence), and loads only order the candidates, so the route
 * table is not waited for. A failed acquire then records its new candidates
 * with a second turn, as the contract asks.
 */
import type { ActorRuntime, Arrival } from "../actors/actor-runtime.ts";
import type { AcquireRoute, RecordSeen, RouteCommand, RouteSettings } from "../actors/route/commands.ts";
import { unavailableAfter, type TurnResult } from "../actors/turn-result.ts";
import type { HostTable } from "../projections/host-table.ts";
import type { RouteTable } from "../projections/route-table.ts";
import { KeyedSequencer } from "./keyed-sequencer.ts";

/** A validated `route.acquire` request. */
export interface AcquireRouteLease {
  readonly route: string;
  readonly fp: string;
  readonly model: string;
  readonly candidates: readonly string[];
}

const NO_LOADS: ReadonlyMap<string, number> = new Map();

/** Route commands of one service instance. */
export class RoutePlacement {
  private readonly order = new KeyedSequencer();

  constructor(
    private readonly runtime: ActorRuntime,
    private readonly hosts: HostTable,
    private readonly routes: RouteTable,
    private readonly settings: RouteSettings,
  ) {}

  /** A command for the route actor `route`, in arrival order. */
  command(route: string, command: RouteCommand, arrival: Arrival = {}): Promise<TurnResult> {
    return this.order.run(route, (admit) => {
      const turn = this.runtime.execute("route", route, command, arrival);
      admit();
      return turn;
    });
  }

  /** Places (or reuses) the lease of `(fp, model)` on the route; a failure records the request's new candidates. */
  async acquire(request: AcquireRouteLease, arrival: Arrival = {}): Promise<TurnResult> {
    const ready = this.hosts.fresh();
    // Handled in the task; this only keeps a failure that comes before our turn from counting as unhandled.
    ready.catch(() => undefined);
    const result = await this.order.run(request.route, async (admit) => {
      try {
        await ready;
      } catch (e) {
        return unavailableAfter(e);
      }
      // The table's own map, read when the actor decides (no copy per request); hosts without leases are absent (0).
      const loads = this.settings.chooser.needsLoads ? this.routes.activeByHost() : NO_LOADS;
      const command: AcquireRoute = {
        op: "acquire",
        fp: request.fp,
        model: request.model,
        candidates: request.candidates,
        hosts: this.hosts.snapshot(),
        loads,
        recordReuse: arrival.requestId !== undefined,
      };
      const turn = this.runtime.execute("route", request.route, command, arrival);
      admit();
      return turn;
    });
    if (result.ok || request.candidates.length === 0) return result;
    const { code } = result.rejection;
    if (code !== "NO_HOST" && code !== "PINNED_DOWN") return result;
    // Whatever the table holds is already in the stream: nothing to record then (the usual case for a retry).
    const known = this.routes.get(request.route).seen;
    if (request.candidates.every((c) => known.has(c))) return result;
    // Under its own op, so its message id never shadows a later successful
    // acquire with the same requestId (a failed command is decided again).
    const record: RecordSeen = { op: "seen", hosts: request.candidates };
    const seen = await this.command(request.route, record, arrival);
    return seen.ok ? result : seen;
  }
}
