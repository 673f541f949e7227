/** The audit's route rules: one host per conversation key, placements on healthy hosts within pins and caps, leases that exist. */
import { isRouteEvent } from "../../route/events.ts";
import { type HistoryEntry } from "../../events/envelope.ts";
import { countLeaseMoves, leaseKey, type RouteState } from "../../route/state.ts";
import { cell } from "../table.ts";
import { keyText, type AuditScope, type KindRules, type Report } from "./kind-rules.ts";

const RULES = {
  "route-key-on-two-hosts":
    "a conversation key (route, fp, model) is on at most one host: a placement of a key that has a lease names that lease's host as `from`",
  "route-placed-on-unhealthy-host":
    "acquire never places a lease (new, replacement, pin or inherited) on a host that is not healthy at that point of the stream",
  "route-new-on-draining-host": "acquire never newly chooses a draining host (the route's pin and inherited placements may be draining)",
  "route-placed-off-pin": "on a pinned route, acquire places leases only on the pin",
  "route-new-on-full-host":
    "acquire never newly chooses a full host: a new lease on a capped host names its host's admission for that key and is the route's next event after the admission's routeSeq; without one, the host's active leases are under its maxLeases",
  "route-unknown-lease":
    "a touch, expiry, release or displacement names a lease the route has, on the host it is on (and a placement's `from` is empty when the key had none)",
} as const;

type RouteRule = keyof typeof RULES;

/** Route rules. */
export const routeRules: KindRules<RouteRule> = {
  kind: "route",
  rules: RULES,
  checker: (scope) => {
    const hosts = scope.fold.states.host;
    const addActive = (host: string, delta: number): void => void scope.activeOnHost.set(host, (scope.activeOnHost.get(host) ?? 0) + delta);
    return {
      check(event, route, state, _place, report) {
        if (!isRouteEvent(event)) return;
        const before = state as RouteState;
        switch (event.type) {
          case "RouteLeasePlaced": {
            const d = event.data;
            const existing = before.leases.get(leaseKey(d.fp, d.model));
            // The key's text is built only for a finding: most placements have none.
            const key = () => keyText(route, d.fp, d.model);
            if (existing !== undefined && d.from !== existing.host) {
              report(
                "route-key-on-two-hosts",
                `${key()} placed on ${cell(d.host)} from ${JSON.stringify(d.from)} while its lease is on ${cell(existing.host)}`,
              );
            } else if (existing === undefined && d.from !== "") {
              report("route-unknown-lease", `${key()} placed from ${cell(d.from)}, but the key had no lease`);
            }
            // An operator's move: no health check, as the contract says.
            if (d.reason === "ctx") break;
            const host = hosts.get(d.host);
            if (host?.healthy !== true) {
              const why = host?.set === true ? "unhealthy" : "never set (unhealthy)";
              report(
                "route-placed-on-unhealthy-host",
                `${key()} placed (${d.reason}${d.reused ? ", inherited" : ""}) on ${cell(d.host)}, which is ${why}`,
              );
            }
            if (before.pinned !== "" && d.host !== before.pinned) {
              report("route-placed-off-pin", `${key()} placed on ${cell(d.host)} while the route is pinned to ${cell(before.pinned)}`);
            }
            if (host?.draining === true && !d.reused && d.host !== before.pinned) {
              report("route-new-on-draining-host", `${key()} newly placed on ${cell(d.host)}, which is draining`);
            }
            // Chosen (not a pin, not inherited): capacity applies.
            if (!d.reused && before.pinned === "") checkCapacity(scope, d, route, before, report);
            break;
          }
          case "RouteLeaseTouched":
            if (!before.leases.has(leaseKey(event.data.fp, event.data.model))) {
              report("route-unknown-lease", `touch of ${keyText(route, event.data.fp, event.data.model)}, which has no lease`);
            }
            break;
          case "RouteLeaseExpired":
            checkRefs(before, route, "expiry", [event.data], report);
            break;
          case "RoutePinned":
            checkRefs(before, route, "displacement", event.data.displaced, report);
            break;
          case "RouteReleased":
            checkRefs(before, route, "release", event.data.released, report);
            break;
          default:
            break;
        }
      },
      /** Keeps the active leases per host current: the leases one route message added and removed. */
      folded(_route, before, after, entry: HistoryEntry) {
        countLeaseMoves((before as RouteState).leases, (after as RouteState).leases, entry, addActive);
      },
    };
  },
};

/** A new lease chosen onto a capped host: admitted for it, in its place, or at least under the cap. */
function checkCapacity(
  { fold, activeOnHost, admissions }: AuditScope,
  d: { fp: string; model: string; host: string; admission?: number | undefined },
  route: string,
  before: RouteState,
  report: Report<RouteRule>,
): void {
  const cap = fold.states.host.get(d.host)?.maxLeases ?? null;
  const key = () => keyText(route, d.fp, d.model);
  if (d.admission !== undefined) {
    const a = admissions.get(d.admission);
    admissions.delete(d.admission);
    if (a === undefined || a.host !== d.host || a.route !== route || a.fp !== d.fp || a.model !== d.model) {
      report(
        "route-new-on-full-host",
        `${key()} placed on ${cell(d.host)} naming admission ${d.admission}, which is not that host's admission of this key`,
      );
    } else if (before.lastSeq !== a.routeSeq) {
      report(
        "route-new-on-full-host",
        `${key()} placed on ${cell(d.host)} with admission ${d.admission} for the route's event after ${a.routeSeq}, but the route was at ${before.lastSeq}`,
      );
    }
    return;
  }
  const active = activeOnHost.get(d.host) ?? 0;
  if (cap !== null && active >= cap) {
    report("route-new-on-full-host", `${key()} newly placed on ${cell(d.host)}, which is full (${active} active leases, maxLeases ${cap})`);
  }
}

/** Each `{fp, model, host}` an event names must be a lease the route has, on that host. */
function checkRefs(
  state: RouteState,
  route: string,
  what: string,
  refs: readonly { fp: string; model: string; host: string }[],
  report: Report<RouteRule>,
): void {
  for (const ref of refs) {
    const lease = state.leases.get(leaseKey(ref.fp, ref.model));
    if (lease === undefined)
      report("route-unknown-lease", `${what} of ${keyText(route, ref.fp, ref.model)} on ${cell(ref.host)}, which has no lease`);
    else if (lease.host !== ref.host)
      report(
        "route-unknown-lease",
        `${what} of ${keyText(route, ref.fp, ref.model)} on ${cell(ref.host)}, but its lease is on ${cell(lease.host)}`,
      );
  }
}
