/**
 * Each kind's logic built from one settings object, for code that folds a
 * stream away from a service's kind modules: the tools, and a start's
 * backlog folded on a worker thread. Folding reads no server setting
 * (settings shape decisions only); the equivalence tests of the worker start
 * and of the tools hold the folds to it.
 */
import type { ActorKind } from "../contract/subjects.ts";
import type { RouteChooserName } from "../contract/route-choosers.ts";
import type { KindLogic } from "../actors/kind-logic.ts";
import { hostLogic } from "../host/logic.ts";
import { lockLogic } from "../lock/logic.ts";
import { proxyLogic } from "../proxy/logic.ts";
import { routeLogic, routeSettingsOf } from "../route/logic.ts";
import { sessionLogic } from "../session/logic.ts";

/** The settings every kind's logic is built from (a service's configuration has them all). */
export type KindFoldSettings = Parameters<typeof lockLogic>[0] &
  Parameters<typeof proxyLogic>[0] &
  Parameters<typeof sessionLogic>[0] & {
    readonly routeIdleMs: number;
    readonly routeChooser: RouteChooserName;
    readonly hashBalanceFactor?: number;
  };

/** Every kind's logic, built from `settings`. */
export function kindFolds(settings: KindFoldSettings) {
  return {
    lock: lockLogic(settings),
    proxy: proxyLogic(settings),
    host: hostLogic(),
    route: routeLogic(routeSettingsOf(settings)),
    session: sessionLogic(settings),
  } satisfies { readonly [K in ActorKind]: Pick<KindLogic<unknown, never>, "initialState" | "evolve" | "replyFor" | "foldVersion"> };
}
