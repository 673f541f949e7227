/**
 * The route projection: a pure fold of one route's history into its leases by
 * `(fp, model)`, its pin and its seen set. Shared by the route actor
 * (hydration), the read endpoints (`route.get`, `route.snapshot`), the load
 * index and the idle sweep.
 */
import type { HistoryEntry } from "../events/envelope.ts";
import { compareCodeUnits } from "../contract/code-units.ts";
import { routeEventSchemas } from "./events.ts";
import { eventIn } from "../events/kind-events.ts";
import { instantMs } from "../events/envelope.ts";
import { LeaseMap } from "./lease-map.ts";

/** One conversation's placement within a route. */
export interface RouteLease {
  readonly fp: string;
  readonly model: string;
  readonly host: string;
  readonly createdAt: string;
  readonly createdAtMs: number;
  /** Last use as recorded (coalesced: may be up to `routeIdleMs / 100` older than the true last use). */
  readonly lastUsedAt: string;
  readonly lastUsedAtMs: number;
}

/** One route's state. */
export interface RouteState {
  readonly route: string;
  /** The pinned host, `""` when the route is not pinned. */
  readonly pinned: string;
  /** Active leases by {@link leaseKey}; an update shares the buckets it does not touch. */
  readonly leases: LeaseMap<RouteLease>;
  /** Every host given to the route as a candidate or that one of its leases was placed on. */
  readonly seen: ReadonlySet<string>;
  /**
   * Stream sequence of the route's last message (0: none). A host admission
   * is bound to it: its lease may only be the route's very next event.
   */
  readonly lastSeq: number;
}

/**
 * The map key of `(fp, model)`: `JSON.stringify([fp, model])`, unambiguous
 * for any pair of strings (and what snapshots hold). Built by hand when
 * neither string needs escaping, which is nearly always: a route fold makes
 * one per event.
 */
export function leaseKey(fp: string, model: string): string {
  return plainJson(fp) && plainJson(model) ? `["${fp}","${model}"]` : JSON.stringify([fp, model]);
}

/** True when JSON.stringify writes `s` between quotes as it is: no quote, backslash, control character or surrogate. */
function plainJson(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return false;
  }
  return true;
}

/** The state of a route with no history. */
export function initialRouteState(route: string): RouteState {
  return { route, pinned: "", leases: LeaseMap.empty(), seen: new Set(), lastSeq: 0 };
}

/**
 * Applies one history entry; messages that do not parse, or that no route
 * writes, change nothing but the route's last sequence.
 */
export function evolveRoute(state: RouteState, entry: HistoryEntry): RouteState {
  const next = evolveRouteContent(state, entry);
  return next.lastSeq === entry.seq ? next : { ...next, lastSeq: entry.seq };
}

function evolveRouteContent(state: RouteState, entry: HistoryEntry): RouteState {
  const event = eventIn(routeEventSchemas, entry);
  if (event === undefined) return state;
  const at = event.at;
  const atMs = instantMs(at);
  switch (event.type) {
    case "RouteLeasePlaced": {
      const d = event.data;
      const leases = state.leases.with(leaseKey(d.fp, d.model), {
        fp: d.fp,
        model: d.model,
        host: d.host,
        createdAt: at,
        createdAtMs: atMs,
        lastUsedAt: at,
        lastUsedAtMs: atMs,
      });
      return { ...state, leases, seen: withSeen(state.seen, d.seen, d.host) };
    }
    case "RouteLeaseTouched": {
      const d = event.data;
      const key = leaseKey(d.fp, d.model);
      const lease = state.leases.get(key);
      const seen = withSeen(state.seen, d.seen);
      if (lease === undefined || lease.lastUsedAtMs >= atMs) return seen === state.seen ? state : { ...state, seen };
      const leases = state.leases.with(key, { ...lease, lastUsedAt: at, lastUsedAtMs: atMs });
      return { ...state, leases, seen };
    }
    case "RouteLeaseExpired":
      return { ...state, leases: without(state.leases, [event.data]), seen: withSeen(state.seen, event.data.seen) };
    case "RouteCandidatesSeen": {
      const seen = withSeen(state.seen, event.data.seen);
      return seen === state.seen ? state : { ...state, seen };
    }
    case "RoutePinned":
      return {
        ...state,
        pinned: event.data.host,
        leases: without(state.leases, event.data.displaced),
        seen: withSeen(state.seen, event.data.seen, event.data.host),
      };
    case "RouteUnpinned":
      return { ...state, pinned: "", seen: withSeen(state.seen, event.data.seen) };
    case "RouteReleased":
      return { ...state, leases: without(state.leases, event.data.released), seen: withSeen(state.seen, event.data.seen) };
    default:
      return state;
  }
}

/**
 * Counts what one route event did to the leases per host: `count(host, -1)`
 * for each lease it took off a host (removed, or moved away), `count(host, 1)`
 * for each it put on one. `before` and `after` are the route's leases around
 * the event. Only the keys the event names are looked at, never every lease
 * of the route, so a route with many live leases costs an index (the route
 * table's, the audit's) no more per event than one with a few.
 */
export function countLeaseMoves(
  before: LeaseMap<RouteLease>,
  after: LeaseMap<RouteLease>,
  entry: HistoryEntry,
  count: (host: string, delta: 1 | -1) => void,
): void {
  if (before === after) return;
  for (const k of leaseKeysChangedBy(entry)) {
    const key = leaseKey(k.fp, k.model);
    const was = before.get(key)?.host;
    const now = after.get(key)?.host;
    if (was === now) continue;
    if (was !== undefined) count(was, -1);
    if (now !== undefined) count(now, 1);
  }
}

/** The lease keys a route event may have changed (placed, moved or removed; a touch moves no lease). */
function leaseKeysChangedBy(entry: HistoryEntry): readonly { fp: string; model: string }[] {
  const event = eventIn(routeEventSchemas, entry);
  if (event === undefined) return [];
  switch (event.type) {
    case "RouteLeasePlaced":
    case "RouteLeaseExpired":
      return [event.data];
    case "RoutePinned":
      return event.data.displaced;
    case "RouteReleased":
      return event.data.released;
    default:
      return [];
  }
}

/** The seen set with `more` (and `host`) added; the same object when nothing is new. */
function withSeen(seen: ReadonlySet<string>, more: readonly string[] | undefined, host?: string): ReadonlySet<string> {
  const add = host === undefined ? (more ?? []) : [...(more ?? []), host];
  if (add.every((h) => seen.has(h))) return seen;
  const next = new Set(seen);
  for (const h of add) next.add(h);
  return next;
}

function without(leases: LeaseMap<RouteLease>, keys: readonly { fp: string; model: string }[]): LeaseMap<RouteLease> {
  return leases.without(keys.map((k) => leaseKey(k.fp, k.model)));
}

/**
 * A route state as a snapshot gives it back: V8's structured serialization
 * keeps plain Maps and Sets but not the lease map's class.
 */
export function reviveRouteState(state: RouteState): RouteState {
  return state.leases instanceof LeaseMap ? state : { ...state, leases: LeaseMap.revive<RouteLease>(state.leases) };
}

/** Orders leases by fp, then model. */
export function compareLeases(a: { fp: string; model: string }, b: { fp: string; model: string }): number {
  return compareCodeUnits(a.fp, b.fp) || compareCodeUnits(a.model, b.model);
}

/** The route's leases sorted by fp, then model. */
export function sortedLeases(state: RouteState): RouteLease[] {
  return [...state.leases.values()].sort(compareLeases);
}

/** The wire shape of a route lease (`route.get`, `route.snapshot`). */
export interface RouteLeaseView {
  readonly route: string;
  readonly fp: string;
  readonly model: string;
  readonly host: string;
  readonly createdAt: string;
  readonly lastUsedAt: string;
}

/** The wire view of one lease of `route`. */
export function routeLeaseView(route: string, lease: RouteLease): RouteLeaseView {
  return { route, fp: lease.fp, model: lease.model, host: lease.host, createdAt: lease.createdAt, lastUsedAt: lease.lastUsedAt };
}
