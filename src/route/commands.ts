/**
 * The commands a route actor takes (docs/protocol.md, Routes), already validated.
 * Whatever a decision needs from outside the route (host health, loads) is
 * carried in the command, so the decider stays pure and replayable.
 */
import type { HostHealth } from "../host/index.ts";
import type { LoadedHost } from "../host/index.ts";
import type { RouteChooser } from "./chooser.ts";

/** Place `(fp, model)` or reuse its lease, in the contract's order: pin, lease, inherit, choose. */
export interface AcquireRoute {
  readonly op: "acquire";
  readonly fp: string;
  readonly model: string;
  readonly candidates: readonly string[];
  /** The host table when the command was sent; a host missing from it was never set (unhealthy). */
  readonly hosts: ReadonlyMap<string, HostHealth>;
  /** Active leases per host, all routes (read only by a chooser that needs loads). */
  readonly loads: ReadonlyMap<string, number>;
  /** The loads hosts published, as known when the command was sent (read by the least-load chooser; absent: unknown). */
  readonly hostLoads?: ReadonlyMap<string, number>;
  /**
   * Hosts in the least-loaded order by `loads` (fewest, then smallest name),
   * holding at least every host of `hosts`, read when the actor decides:
   * the default chooser reads the first few instead of every candidate.
   * Optional: without it, it looks at every candidate.
   */
  readonly order?: Iterable<LoadedHost>;
  /**
   * Record even a reuse whose last use is recent (the request carries a
   * `requestId`): a repeat must get the same answer, which only a recorded
   * reply guarantees.
   */
  readonly recordReuse: boolean;
  /** Capped hosts an admission found full during this request (docs/routes.md, "Host capacity"). */
  readonly full?: ReadonlySet<string>;
  /** The admission a capped host granted this request, bound to the route's last sequence. */
  readonly admission?: GrantedAdmission;
}

/** A host's admission of one new lease, as the route decider checks it. */
export interface GrantedAdmission {
  readonly host: string;
  /** Stream sequence of the `HostLeaseAdmitted` event. */
  readonly seq: number;
  /** The route's last sequence it was granted for: only valid while the route is still there. */
  readonly routeSeq: number;
}

/**
 * The reply of an acquire whose chooser picked a capped host: ask that host
 * for an admission bound to `routeSeq`, then decide again with it. Never
 * sent to a client: the acquire endpoint acts on it.
 */
export interface AdmissionNeeded {
  readonly admit: string;
  readonly routeSeq: number;
}

/** Is `reply` an {@link AdmissionNeeded}? */
export function isAdmissionNeeded(reply: unknown): reply is AdmissionNeeded {
  return typeof reply === "object" && reply !== null && typeof (reply as AdmissionNeeded).admit === "string";
}
/** Move the lease of `(fp, model)` to `host`, whatever its health. */
export interface MoveRoute {
  readonly op: "move";
  readonly fp: string;
  readonly model: string;
  readonly host: string;
}
/** Add hosts to the route's seen set (`route.candidates`). */
export interface AddCandidates {
  readonly op: "candidates";
  readonly hosts: readonly string[];
}
/** Add the candidates of a failed acquire to the seen set (the contract records them even then). */
export interface RecordSeen {
  readonly op: "seen";
  readonly hosts: readonly string[];
}
/** Pin the route to a host it has seen, displacing its leases on other hosts. */
export interface PinRoute {
  readonly op: "pin";
  readonly host: string;
}
/** Remove the pin; leases stay. */
export interface UnpinRoute {
  readonly op: "unpin";
}
/** Drop every lease of the route; the pin stays. */
export interface ReleaseRoute {
  readonly op: "release";
}
/** The sweep's request: drop the lease of `(fp, model)` if it has idled out. */
export interface ExpireLease {
  readonly op: "expire";
  readonly fp: string;
  readonly model: string;
}

/** Settle an admission that was never used: only while the route is still at `routeSeq` (else it is settled already). */
export interface LapseAdmission {
  readonly op: "lapse";
  readonly host: string;
  readonly admission: number;
  readonly routeSeq: number;
}

/** Any route command. */
export type RouteCommand =
  AcquireRoute | MoveRoute | AddCandidates | RecordSeen | PinRoute | UnpinRoute | ReleaseRoute | ExpireLease | LapseAdmission;

/** Server-side route settings. */
export interface RouteSettings {
  /** A lease unused for longer is expired by the sweep. */
  readonly routeIdleMs: number;
  /** Picks the host of a new lease. */
  readonly chooser: RouteChooser;
}

/** How stale a lease's recorded last use may get before a reuse records it again (`routeIdleMs / 100`). */
export function touchEveryMs(settings: Pick<RouteSettings, "routeIdleMs">): number {
  return Math.floor(settings.routeIdleMs / 100);
}
