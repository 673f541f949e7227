/**
 * Host capacity across instances (docs/routes.md, "Host capacity"): before a
 * new route lease goes onto a capped host, the host's own actor admits it,
 * with the expected-sequence check on the host's subject. Two instances that
 * admit onto the same host at once are thereby put in one order, and the
 * second counts the first's admission. Each admission is bound to one place
 * in its route's history (the route's next event), so whether it became a
 * lease is always decidable from the route's subject: once the route has
 * moved past that place, the lease is either among the host's active leases
 * or never will be.
 */
import { unavailable, type TurnResult } from "../actors/actor-runtime.ts";
import { type ActorRuntime, type Arrival } from "../actors/actor-runtime.ts";
import { type Clock } from "../actors/clock.ts";
import type { AdmitLease } from "../host/index.ts";
import type { LapseAdmission } from "./commands.ts";
import { freshBy } from "../actors/deadlines.ts";
import type { HostState } from "../host/index.ts";
import type { HostTable } from "../host/index.ts";
import type { RouteTable } from "./table.ts";

/** What an admission request came to. */
export type AdmissionOutcome =
  | { readonly kind: "admitted"; readonly seq: number }
  /** The cap was lifted meanwhile: place freely. */
  | { readonly kind: "uncapped" }
  | { readonly kind: "full" }
  /** The stream could not be read or written in time: answer this. */
  | { readonly kind: "failed"; readonly result: TurnResult };

/** The lease an admission is asked for. */
export interface AdmissionRequest {
  readonly route: string;
  readonly fp: string;
  readonly model: string;
  /** The route's last sequence when the route decider asked (its lease must come right after). */
  readonly routeSeq: number;
}

/**
 * An admission still open this long after it was granted is lapsed by the
 * next admitter (a `RouteAdmissionLapsed` on its route, fenced by the same
 * expected sequence, so an acquire still using it just decides again). Only
 * an admitter that crashed between admission and placement leaves one behind.
 */
export const LAPSE_ADMISSION_AFTER_MS = 5000;

/** Counts of one admission before giving up under contention (each after the host moved on). */
const MAX_COUNTS = 16;

/** Asks capped hosts for admissions of new route leases. */
export class HostAdmissions {
  constructor(
    private readonly runtime: ActorRuntime,
    private readonly hosts: HostTable,
    private readonly routes: RouteTable,
    private readonly clock: Clock,
  ) {}

  /**
   * Asks `hostName` to admit one new lease for `request`. The count is made
   * against the host's open admissions as this instance knows them; when the
   * host has moved on meanwhile (another admission recorded or closed), it
   * is made again after catching the route table up.
   */
  async admit(hostName: string, request: AdmissionRequest, arrival: Arrival = {}): Promise<AdmissionOutcome> {
    const a = this.runtime.deadlineFor(arrival);
    for (let round = 0; round < MAX_COUNTS; round++) {
      // The count must include every lease placed so far: catch the route table up with the stream.
      await freshBy(this.routes, this.runtime, a.deadline);
      const lapsed = await this.lapseStuck(this.stateOf(hostName), a);
      if (lapsed !== undefined) return { kind: "failed", result: lapsed };
      const state = this.stateOf(hostName);
      const command: AdmitLease = {
        op: "admit",
        ...request,
        active: this.routes.activeOn(hostName),
        settled: this.settled(state),
        counted: state?.admissions.map((x) => x.seq) ?? [],
      };
      const result = await this.runtime.execute("host", hostName, command, { deadline: a.deadline });
      if (!result.ok) return result.rejection.code === "NO_HOST" ? { kind: "full" } : { kind: "failed", result };
      const reply = result.reply as { admission?: number; stale?: boolean };
      if (reply.stale === true) continue;
      const seq = reply.admission ?? 0;
      return seq > 0 ? { kind: "admitted", seq } : { kind: "uncapped" };
    }
    return {
      kind: "failed",
      result: unavailable(`host ${hostName}'s admissions kept changing while this instance counted its leases`, 100),
    };
  }

  private stateOf(hostName: string): HostState | undefined {
    return this.hosts.snapshot().get(hostName);
  }

  /** Admissions whose route has moved past their place: counted among the active leases, or never to be. */
  private settled(state: HostState | undefined): number[] {
    if (state === undefined) return [];
    return state.admissions.filter((a) => this.routes.get(a.route).lastSeq > a.routeSeq).map((a) => a.seq);
  }

  /** Lapses the open admissions older than {@link LAPSE_ADMISSION_AFTER_MS}; a failure to write is returned. */
  private async lapseStuck(state: HostState | undefined, arrival: Arrival): Promise<TurnResult | undefined> {
    if (state === undefined) return undefined;
    const now = this.clock.now();
    for (const a of state.admissions) {
      if (now - a.atMs < LAPSE_ADMISSION_AFTER_MS || this.routes.get(a.route).lastSeq > a.routeSeq) continue;
      const lapse: LapseAdmission = { op: "lapse", host: state.host, admission: a.seq, routeSeq: a.routeSeq };
      const result = await this.runtime.execute("route", a.route, lapse, { deadline: arrival.deadline });
      if (!result.ok) return result;
    }
    return undefined;
  }
}
