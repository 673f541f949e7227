/**
 * The route table: every route's state as the route events say, kept current
 * by the route {@link KindProjection}, with an index of active leases per host (the
 * least-loaded chooser's loads and `host.list`'s `active`).
 */
import type { HistoryEntry } from "../events/envelope.ts";
import type { KindProjection } from "../projections/kind-projection.ts";
import { HostLoadOrder } from "../host/index.ts";
import { LeaseMap } from "./lease-map.ts";
import { ProjectedReadModel } from "../projections/read-model.ts";
import { countLeaseMoves, type RouteLease, type RouteState } from "./state.ts";

/** Follows the route events of one prefix. */
export class RouteTable extends ProjectedReadModel<RouteState> {
  private readonly leasesOf = new Map<string, LeaseMap<RouteLease>>();
  private readonly active = new Map<string, number>();
  /** Hosts by (active leases, name), kept with `active`: the least-loaded chooser's order. */
  readonly loadOrder = new HostLoadOrder();

  constructor(projection: KindProjection<RouteState>) {
    super(projection);
    projection.onFold((id, state, entry) => this.index(id, state, entry));
    projection.onRestore(() => {
      this.leasesOf.clear();
      this.active.clear();
      // Every host keeps its place, at load 0 until the leases below count again.
      for (const { name } of [...this.loadOrder]) this.loadOrder.set(name, 0);
      for (const [id, state] of projection.entries()) {
        this.leasesOf.set(id, state.leases);
        for (const lease of state.leases.values()) this.add(lease.host, 1);
      }
    });
  }

  /** One route's state (initial when it has no events). */
  get(route: string): RouteState {
    return this.projection.get(route);
  }

  /** Every route with at least one event. */
  routes(): IterableIterator<[string, RouteState]> {
    return this.projection.entries();
  }

  /** Active leases on `host`, all routes together. */
  activeOn(host: string): number {
    return this.active.get(host) ?? 0;
  }

  /** Includes `hosts` in {@link RouteTable.loadOrder} (at their current load) where they are not yet. */
  includeHosts(hosts: Iterable<string>): void {
    for (const host of hosts) this.loadOrder.include(host, this.activeOn(host));
  }

  /** Active leases per host, hosts with none absent. */
  activeByHost(): ReadonlyMap<string, number> {
    return this.active;
  }

  private index(id: string, state: RouteState, entry: HistoryEntry): void {
    const before = this.leasesOf.get(id) ?? LeaseMap.empty<RouteLease>();
    this.leasesOf.set(id, state.leases);
    countLeaseMoves(before, state.leases, entry, (host, delta) => this.add(host, delta));
  }

  private add(host: string, delta: number): void {
    const n = (this.active.get(host) ?? 0) + delta;
    if (n === 0) this.active.delete(host);
    else this.active.set(host, n);
    this.loadOrder.set(host, n);
  }
}
