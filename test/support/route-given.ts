/**
 * The route decider bound to the one given/when/then helper
 * (test/support/decider-spec.ts), and builders of route events (through
 * encode/decode, so only events the stream would accept can be given) and
 * host tables.
 */
import type { HistoryEntry } from "../../src/events/envelope.ts";
import type { RouteEvent } from "../../src/route/events.ts";
import { decideRoute } from "../../src/route/decide.ts";
import { chooserNamed } from "../../src/route/chooser.ts";
import type { RouteChooserName } from "../../src/contract/route-choosers.ts";
import type { AcquireRoute, RouteCommand, RouteSettings } from "../../src/route/commands.ts";
import { evolveRoute, initialRouteState, type RouteState } from "../../src/route/state.ts";
import type { HostHealth } from "../../src/host/state.ts";
import { deciderSpec, type Then as SpecThen } from "./decider-spec.ts";
import { specEvent, T0 } from "./event-builders.ts";

export { T0 };

/** The route specs use unless they name another. */
export const ROUTE = "chat/eu";
/** Idle time of the specs: a lease unused for more than this idles out; touches are coalesced to 1/100 of it. */
export const IDLE_MS = 60_000;

/** Route settings with the given chooser. */
export function settingsWith(chooser: RouteChooserName = "least-loaded", routeIdleMs = IDLE_MS): RouteSettings {
  return { routeIdleMs, chooser: chooserNamed(chooser) };
}

type DataOf<T extends RouteEvent["type"]> = Extract<RouteEvent, { type: T }>["data"];

let nextSeq = 1;

/** One recorded route event decided at `at`. */
export function routeEvent<T extends RouteEvent["type"]>(type: T, data: DataOf<T>, at = T0, route = ROUTE): HistoryEntry {
  return specEvent(nextSeq++, "route", route, type, data, at);
}

/** A lease of `(fp, model)` placed on `host` at `at` as a fresh placement. */
export function placed(fp: string, model: string, host: string, at = T0, extra: Partial<DataOf<"RouteLeasePlaced">> = {}): HistoryEntry {
  return routeEvent("RouteLeasePlaced", { fp, model, host, from: "", reason: "new", reused: false, ...extra }, at);
}

/** The data of a placement the chooser decided: a new lease of `(fp, model)` on `host`, by least-loaded unless `extra` names another. */
export function chosen(
  fp: string,
  model: string,
  host: string,
  extra: Partial<DataOf<"RouteLeasePlaced">> = {},
): DataOf<"RouteLeasePlaced"> {
  return { fp, model, host, from: "", reason: "new", reused: false, chooser: "least-loaded", ...extra };
}

/** The lease of `(fp, model)` used at `at`. */
export function touched(fp: string, model: string, at: number): HistoryEntry {
  return routeEvent("RouteLeaseTouched", { fp, model }, at);
}

/** Hosts seen as candidates. */
export function seen(...hosts: string[]): HistoryEntry {
  return routeEvent("RouteCandidatesSeen", { seen: hosts });
}

/** The route pinned to `host` (nothing displaced). */
export function pinned(host: string, at = T0): HistoryEntry {
  return routeEvent("RoutePinned", { host, displaced: [] }, at);
}

/** A host table: `up` healthy, `draining` healthy and draining, `down` set unhealthy; anything else was never set. */
export function hostsOf(t: { up?: string[]; draining?: string[]; down?: string[] }): ReadonlyMap<string, HostHealth> {
  const m = new Map<string, HostHealth>();
  for (const h of t.up ?? []) m.set(h, { healthy: true, draining: false });
  for (const h of t.draining ?? []) m.set(h, { healthy: true, draining: true });
  for (const h of t.down ?? []) m.set(h, { healthy: false, draining: false });
  return m;
}

/** An acquire command with defaults: no candidates, empty host table, no loads, no requestId. */
export function acquire(fp: string, model: string, a: Partial<Omit<AcquireRoute, "op" | "fp" | "model">> = {}): AcquireRoute {
  return { op: "acquire", fp, model, candidates: [], hosts: new Map(), loads: new Map(), recordReuse: false, ...a };
}

/** What a spec expects of a decision. */
export type Then = SpecThen<RouteEvent>;

/** A route with a given history, ready for a command. */
export interface Given {
  readonly state: RouteState;
  when(command: RouteCommand, now?: number, settings?: RouteSettings): Then;
}

/** Folds `history` with evolveRoute and returns a spec builder for the resulting state. */
export function givenRoute(history: readonly HistoryEntry[] = [], route = ROUTE): Given {
  const given = routeSpec.given(history, route);
  return { state: given.state, when: (command, now = T0, settings = settingsWith()) => given.when(command, now, settings) };
}

/** The route kind's specs. */
export const routeSpec = deciderSpec<RouteState, RouteCommand, RouteEvent, RouteSettings>(
  { initial: initialRouteState, evolve: evolveRoute, decide: decideRoute },
  settingsWith(),
  ROUTE,
);
