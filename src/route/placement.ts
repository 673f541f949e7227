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
import type { Clock } from "../actors/clock.ts";
import { isAdmissionNeeded, type AcquireRoute, type GrantedAdmission, type RecordSeen, type RouteCommand } from "./commands.ts";

import { unavailable, unavailableAfter, type TurnResult } from "../actors/actor-runtime.ts";
import type { HostLoads } from "../host/index.ts";
import type { HostTable } from "../host/index.ts";
import type { RouteTable } from "./table.ts";
import { freshBy } from "../actors/deadlines.ts";
import { HostAdmissions } from "./host-admissions.ts";
import { KeyedSequencer } from "../actors/keyed-sequencer.ts";

/** A validated `route.acquire` request. */
export interface AcquireRouteLease {
  readonly route: string;
  readonly fp: string;
  readonly model: string;
  readonly candidates: readonly string[];
}

/** Decisions of one `route.acquire` beyond its first, when capped hosts turn out full or the route moves meanwhile. */
const MAX_CAPACITY_ROUNDS = 8;

/** Route commands of one service instance. */
export class RoutePlacement {
  private readonly order = new KeyedSequencer();
  private readonly admissions: HostAdmissions;
  /** The host table last included in the route table's load order. */
  private ordered: ReadonlyMap<string, unknown> | undefined;

  constructor(
    private readonly runtime: ActorRuntime,
    private readonly hosts: HostTable,
    private readonly routes: RouteTable,
    clock: Clock,
    /** The loads hosts publish; without it every load is unknown. */
    private readonly hostLoads?: HostLoads,
  ) {
    this.admissions = new HostAdmissions(runtime, hosts, routes, clock);
  }

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
    // One deadline for every read and turn of the acquire, from its arrival.
    const a = this.runtime.deadlineFor(arrival);
    const ready = freshBy(this.hosts, this.runtime, a.deadline);
    // Handled in the task; this only keeps a failure that comes before our turn from counting as unhandled.
    ready.catch(() => undefined);
    const result = await this.order.run(request.route, async (admit) => {
      try {
        await ready;
      } catch (e) {
        return unavailableAfter(e);
      }
      return this.decide(request, a, admit);
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
    const seen = await this.command(request.route, record, a);
    return seen.ok ? result : seen;
  }

  /**
   * The acquire's decisions: the first enters the actor's mailbox at once
   * (then `admitted` lets the route's next command follow); a new lease on a
   * capped host is first admitted by the host's actor, and the route decides
   * again with the admission (or with the host known to be full).
   */
  private async decide(request: AcquireRouteLease, arrival: Arrival & { deadline: number }, admitted: () => void): Promise<TurnResult> {
    // Made only when an admission finds a capped host full (rare): a new placement allocates no Set for it.
    let full: Set<string> | undefined;
    let admission: GrantedAdmission | undefined;
    let refreshed = false;
    for (let round = 0; ; round++) {
      const hosts = this.hosts.snapshot();
      if (hosts !== this.ordered) {
        // The order must hold every host the command's table knows (a new table: a host event, rare).
        this.routes.includeHosts(hosts.keys());
        this.ordered = hosts;
      }
      const command: AcquireRoute = {
        op: "acquire",
        fp: request.fp,
        model: request.model,
        candidates: request.candidates,
        hosts,
        // The table's own map, read when the actor decides (no copy per request); hosts without leases are absent (0).
        // Every chooser reads it for capacity (a capped host at its cap is skipped); only least-loaded orders by it.
        loads: this.routes.activeByHost(),
        order: this.routes.loadOrder,
        // The loads known now, as data the decision reads (the same immutable map until one changes).
        hostLoads: this.hostLoads?.known(),
        recordReuse: arrival.requestId !== undefined,
        // Fields absent as undefined, not spread in: one object of one shape per command.
        full: full === undefined ? undefined : new Set(full),
        admission,
      };
      const turn = this.runtime.execute("route", request.route, command, arrival);
      if (round === 0) admitted();
      const decided = await turn;
      if (!decided.ok && decided.rejection.details?.["full"] !== undefined && !refreshed) {
        // Full by the route table's loads, which are not waited for: look again once they are current
        // (a lease released through another instance a moment ago frees its slot here too).
        refreshed = true;
        await freshBy(this.routes, this.runtime, arrival.deadline);
        continue;
      }
      if (!decided.ok || !isAdmissionNeeded(decided.reply)) return decided;
      if (round >= MAX_CAPACITY_ROUNDS) return unavailable(`route ${request.route} kept moving while its host admitted a lease`, 100);
      const need = decided.reply;
      admission = undefined;
      const outcome = await this.admissions.admit(
        need.admit,
        { route: request.route, fp: request.fp, model: request.model, routeSeq: need.routeSeq },
        arrival,
      );
      if (outcome.kind === "failed") return outcome.result;
      if (outcome.kind === "full") (full ??= new Set()).add(need.admit);
      if (outcome.kind === "admitted") admission = { host: need.admit, seq: outcome.seq, routeSeq: need.routeSeq };
    }
  }
}
