/**
 * The host projection: a pure fold of one host's history into its health,
 * its capacity and the admissions of new route leases still in flight.
 * Shared by the host actor, the host table the route endpoints read, and
 * `host.list`.
 */
import type { HistoryEntry } from "../events/envelope.ts";
import { hostEventSchemas } from "./events.ts";
import { eventIn } from "../events/kind-events.ts";
import { instantMs } from "../events/envelope.ts";

/** What placement needs to know of a host. */
export interface HostHealth {
  readonly healthy: boolean;
  readonly draining: boolean;
  /** The most route leases the chooser may place on the host; null: no limit (optional for hosts built before 1.1). */
  readonly maxLeases?: number | null;
}

/**
 * An admission of a capped host not known to be settled: the lease of
 * `(route, fp, model)` may still be placed there, as the route's event right
 * after `routeSeq`.
 */
export interface HostAdmission {
  /** Stream sequence of the `HostLeaseAdmitted` event (its id). */
  readonly seq: number;
  readonly route: string;
  readonly fp: string;
  readonly model: string;
  readonly routeSeq: number;
  /** When it was admitted (epoch ms), so a stuck one can be lapsed. */
  readonly atMs: number;
}

/** One host's state; a host never set is unhealthy, not draining and uncapped. */
export interface HostState extends HostHealth {
  readonly host: string;
  /** Has `host.set` ever recorded this host (only those are listed)? */
  readonly set: boolean;
  readonly maxLeases: number | null;
  /** Admissions not yet closed, oldest first. */
  readonly admissions: readonly HostAdmission[];
}

const NO_ADMISSIONS: readonly HostAdmission[] = [];

/** The state of a host with no history. */
export function initialHostState(host: string): HostState {
  return { host, set: false, healthy: false, draining: false, maxLeases: null, admissions: NO_ADMISSIONS };
}

/** Applies one history entry; messages that do not parse change nothing. */
export function evolveHost(state: HostState, entry: HistoryEntry): HostState {
  const event = eventIn(hostEventSchemas, entry);
  if (event === undefined) return state;
  switch (event.type) {
    case "HostStateSet":
      return {
        ...state,
        set: true,
        healthy: event.data.healthy,
        draining: event.data.draining,
        maxLeases: event.data.maxLeases ?? null,
      };
    case "HostLeaseAdmitted": {
      const d = event.data;
      const closed = new Set(d.closed);
      const admissions = state.admissions.filter((a) => !closed.has(a.seq));
      admissions.push({ seq: entry.seq, route: d.route, fp: d.fp, model: d.model, routeSeq: d.routeSeq, atMs: instantMs(event.at) });
      return { ...state, admissions };
    }
  }
}
