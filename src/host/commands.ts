/** The commands a host actor takes (docs/protocol.md, Routes), already validated. */

/** Record the host's whole state: health, draining and capacity (`host.set`). */
export interface SetHost {
  readonly op: "set";
  readonly healthy: boolean;
  readonly draining: boolean;
  /** The most route leases the chooser may place on the host; null: no limit. */
  readonly maxLeases: number | null;
}

/**
 * Let one new lease of `(route, fp, model)` onto the capped host, as the
 * route's event right after `routeSeq` (docs/routes.md, "Host capacity").
 * What the host cannot see of the routes is carried in the command, read
 * from the route table once it had caught up with the stream, so the
 * decision stays pure: `active` (route leases on the host) and `settled`
 * (admissions whose route has moved past their `routeSeq`, so they are
 * either among `active` or never will be).
 */
export interface AdmitLease {
  readonly op: "admit";
  readonly route: string;
  readonly fp: string;
  readonly model: string;
  readonly routeSeq: number;
  readonly active: number;
  readonly settled: readonly number[];
  /**
   * The host's open admissions `active` and `settled` were counted against.
   * Closing an admission moves its lease into `active`, so counts made
   * against another set are stale: the decider asks for a new count then.
   */
  readonly counted: readonly number[];
}

/** Any host command. */
export type HostCommand = SetHost | AdmitLease;
