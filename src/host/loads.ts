/**
 * Host loads (docs/protocol.md, "Host load and the load-aware choosers"): the
 * latest load each host published on `<prefix>.loads.<host>` and when it
 * arrived. Not an event and not in the stream: every instance keeps its own
 * table from the messages it receives, and a load older than the stale
 * window counts as unknown (the host or its agent stopped reporting).
 *
 * Loads of hosts that have no host record (a typo, a host not set up yet, or
 * a flood of made-up names) are kept for at most `maxUnknown` hosts, the one
 * that reported longest ago dropped first, so no publisher can grow the table
 * without bound.
 *
 * A route decision reads the loads as data: {@link HostLoads.known} is an
 * immutable map of the loads known at one instant, which the route command
 * carries, so the chooser stays a pure function of what the command holds.
 */

/** The time source the table reads (the service's injected clock). */
export interface LoadClock {
  now(): number;
}

interface Reported {
  readonly load: number;
  readonly atMs: number;
}

import { isHostLoad } from "../contract/host-load.ts";
import { jsonObjectIn } from "../contract/json-object.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });
const NONE: ReadonlyMap<string, number> = new Map();

/**
 * The load a message carries: a JSON object whose `load` is a finite number
 * `>= 0`; undefined for anything else (which the table ignores).
 */
export function loadOfMessage(data: Uint8Array): number | undefined {
  const load = jsonObjectIn(data, utf8)?.["load"];
  return isHostLoad(load) ? load : undefined;
}

/** Settings of {@link HostLoads} beyond the stale window. */
export interface HostLoadsOptions {
  /** Hosts without a host record whose loads are kept (default {@link DEFAULT_MAX_UNKNOWN_LOADS}). */
  readonly maxUnknown?: number;
}

/** How many hosts without a host record keep their loads by default (`--max-unknown-loads`). */
export const DEFAULT_MAX_UNKNOWN_LOADS = 10_000;

/** The latest load of every host that reported within the stale window. */
export class HostLoads {
  private readonly latest = new Map<string, Reported>();
  /** Hosts with a load and no host record, the one that reported longest ago first. */
  private readonly unknown = new Set<string>();
  private readonly maxUnknown: number;
  private hasRecord: (host: string) => boolean = () => false;
  /** What {@link known} answered last, valid up to `knownUntil` unless a report arrives. */
  private cached: ReadonlyMap<string, number> | undefined = NONE;
  private knownUntil = Infinity;

  /** `staleMs`: a load older than this is unknown (`--load-stale-ms`). */
  constructor(
    private readonly staleMs: number,
    private readonly clock: LoadClock,
    options: HostLoadsOptions = {},
  ) {
    this.maxUnknown = options.maxUnknown ?? DEFAULT_MAX_UNKNOWN_LOADS;
  }

  /** Tells the table which hosts have a host record (until told, none has). */
  recogniseHosts(hasRecord: (host: string) => boolean): void {
    this.hasRecord = hasRecord;
  }

  /** Hosts whose loads are kept (stale ones included until {@link known} drops them). */
  get size(): number {
    return this.latest.size;
  }

  /** Takes one message from `host`'s load subject; true when it carried a load (anything else is ignored). */
  report(host: string, data: Uint8Array): boolean {
    const load = loadOfMessage(data);
    if (load === undefined) return false;
    this.latest.set(host, { load, atMs: this.clock.now() });
    this.cached = undefined;
    if (!this.hasRecord(host)) this.noteUnknown(host);
    return true;
  }

  /** Moves `host` to the newest end of the unknown hosts and drops the oldest past the bound. */
  private noteUnknown(host: string): void {
    this.unknown.delete(host);
    this.unknown.add(host);
    if (this.unknown.size <= this.maxUnknown) return;
    const oldest = this.unknown.values().next().value!;
    this.unknown.delete(oldest);
    // A host set up since its last report keeps its load.
    if (!this.hasRecord(oldest)) this.latest.delete(oldest);
  }

  /** The load of `host` now, or null when it is unknown (never reported, or older than the stale window). */
  loadOf(host: string): number | null {
    return this.known().get(host) ?? null;
  }

  /**
   * Every load known now, as an immutable map (the same map until a report
   * arrives or one of its loads goes stale). Stale loads are dropped from
   * the table here, so it holds only hosts that reported lately.
   */
  known(): ReadonlyMap<string, number> {
    const now = this.clock.now();
    if (this.cached !== undefined && now <= this.knownUntil) return this.cached;
    const known = new Map<string, number>();
    let until = Infinity;
    for (const [host, { load, atMs }] of this.latest) {
      // Older than the window (strictly) is unknown; exactly at its edge is still known.
      if (now - atMs > this.staleMs) {
        this.latest.delete(host);
        this.unknown.delete(host);
        continue;
      }
      known.set(host, load);
      until = Math.min(until, atMs + this.staleMs);
    }
    this.cached = known.size === 0 ? NONE : known;
    this.knownUntil = until;
    return this.cached;
  }
}
