/**
 * The host table: every host's health as the host events say, kept current by
 * a {@link KindFollower}. Its snapshot is an immutable map replaced on every
 * host event (rare: operators and health checkers), so a route command can
 * carry the whole table by reference and its decision stays replayable.
 */
import type { EventLog, Subjects } from "../events/index.ts";
import { FollowedReadModel } from "./follower.ts";
import { evolveHost, initialHostState, type HostState } from "./host.ts";

/** Follows the host events of one prefix. */
export class HostTable extends FollowedReadModel<HostState> {
  private table: ReadonlyMap<string, HostState> = new Map();


  constructor(log: EventLog, subjects: Subjects) {
    super(log, subjects.eventsOfKind("host"), { initialState: initialHostState, evolve: evolveHost });
    this.follower.onFold((id, state) => {
      if (this.table.get(id) === state) return;
      const next = new Map(this.table);
      next.set(id, state);
      this.table = next;
    });
  }




  /** The table as of now (immutable); a host missing from it was never set. */
  snapshot(): ReadonlyMap<string, HostState> {
    return this.table;
  }
}
