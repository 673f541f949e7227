/**
 * Hosts in the least-loaded chooser's order: fewest active route leases (all
 * routes), then the smallest name by code unit. The route table keeps each
 * host's place current as leases come and go, so a placement reads the first
 * few hosts instead of looking up the load of every candidate.
 */
import { compareCodeUnits } from "../contract/code-units.ts";
import { SortedChunks } from "../projections/sorted-chunks.ts";

/** A host's place in the order. */
export interface LoadedHost {
  readonly load: number;
  readonly name: string;
}

const byLoadThenName = (a: LoadedHost, b: LoadedHost): number => a.load - b.load || compareCodeUnits(a.name, b.name);

/** Hosts ordered by (active leases, name); a host once included stays (with 0 when it has no lease). */
export class HostLoadOrder {
  private readonly order = new SortedChunks<LoadedHost>(byLoadThenName);
  private readonly loads = new Map<string, number>();

  /** How many hosts the order holds. */
  get size(): number {
    return this.order.size;
  }

  /** Includes `host` with `load` unless it is there already. */
  include(host: string, load: number): void {
    if (this.loads.has(host)) return;
    this.loads.set(host, load);
    this.order.add({ load, name: host });
  }

  /** Sets the load of `host` (including it when new). */
  set(host: string, load: number): void {
    const was = this.loads.get(host);
    if (was === load) return;
    if (was !== undefined) this.order.delete({ load: was, name: host });
    this.loads.set(host, load);
    this.order.add({ load, name: host });
  }

  /** Removes every host. */
  clear(): void {
    this.order.clear();
    this.loads.clear();
  }

  /** The hosts, least loaded first. */
  [Symbol.iterator](): IterableIterator<LoadedHost> {
    return this.order[Symbol.iterator]();
  }
}
