/**
 * The host projection: a pure fold of one host's history into its health.
 * Shared by the host actor, the host table the route endpoints read, and
 * `host.list`.
 */
import type { HistoryEntry } from "../events/index.ts";
import { isHostEvent, isUnparsable } from "../events/index.ts";

/** What placement needs to know of a host. */
export interface HostHealth {
  readonly healthy: boolean;
  readonly draining: boolean;
}

/** One host's state; a host never set is unhealthy and not draining. */
export interface HostState extends HostHealth {
  readonly host: string;
  /** Has `host.set` ever recorded this host (only those are listed)? */
  readonly set: boolean;
}

/** The state of a host with no history. */
export function initialHostState(host: string): HostState {
  return { host, set: false, healthy: false, draining: false };
}

/** Applies one history entry; messages that do not parse change nothing. */
export function evolveHost(state: HostState, entry: HistoryEntry): HostState {
  if (isUnparsable(entry)) return state;
  const event = entry.event;
  if (!isHostEvent(event)) return state;
  return { host: state.host, set: true, healthy: event.data.healthy, draining: event.data.draining };
}
