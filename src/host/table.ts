/**
 * The host table: every host's health as the host events say, kept current by
 * the host {@link KindProjection}. Its snapshot is an immutable map replaced on every
 * host event (rare: operators and health checkers), so a route command can
 * carry the whole table by reference and its decision stays replayable.
 */
import type { KindProjection } from "../projections/kind-projection.ts";
import { ProjectedReadModel } from "../projections/read-model.ts";
import type { HostState } from "./state.ts";

/** Follows the host events of one prefix. */
export class HostTable extends ProjectedReadModel<HostState> {
  private table: ReadonlyMap<string, HostState> = new Map();

  constructor(projection: KindProjection<HostState>) {
    super(projection);
    // A snapshot-restored projection holds states the fold listener never saw.
    projection.onRestore(() => (this.table = new Map(projection.entries())));
    projection.onFold((id, state) => {
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
