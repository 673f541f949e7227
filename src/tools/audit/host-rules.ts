/** The audit's host rules: a capped host admits a new lease only while it has room. */
import { isHostEvent } from "../../host/events.ts";
import type { HostState } from "../../host/state.ts";
import { keyText, type KindRules } from "./kind-rules.ts";

const RULES = {
  "host-admitted-when-full":
    "a host admits a new lease only while its active route leases plus its admissions still open (their route not yet past their routeSeq) are under its maxLeases",
} as const;

/** Host rules. */
export const hostRules: KindRules<keyof typeof RULES> = {
  kind: "host",
  rules: RULES,
  checker: ({ fold, activeOnHost, admissions }) => {
    /** Admissions of `host` whose route has not moved past their place: they may still become leases. */
    const openAdmissions = (state: HostState): number => {
      let open = 0;
      for (const a of state.admissions) if (fold.get("route", a.route).lastSeq <= a.routeSeq) open++;
      return open;
    };
    return {
      check(event, name, state, { seq }, report) {
        if (!isHostEvent(event) || event.type !== "HostLeaseAdmitted") return;
        const before = state as HostState;
        const d = event.data;
        admissions.set(seq, { host: name, route: d.route, fp: d.fp, model: d.model, routeSeq: d.routeSeq });
        if (before.maxLeases === null) return;
        const active = activeOnHost.get(name) ?? 0;
        const open = openAdmissions(before);
        if (active + open >= before.maxLeases) {
          report(
            "host-admitted-when-full",
            `admitted ${keyText(d.route, d.fp, d.model)} with ${active} active leases and ${open} open admissions, maxLeases ${before.maxLeases}`,
          );
        }
      },
    };
  },
};
