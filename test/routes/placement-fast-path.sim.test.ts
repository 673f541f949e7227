/**
 * The route decider's fast paths decide exactly as its general path over
 * random histories: the default chooser's walk of the hosts' load order (an
 * index kept by the route table) and its one pass over the candidates,
 * against the general path (forced by a chooser equal to least-loaded but
 * not the same object), and the remembered seen checks of long candidate
 * lists against the plain definition (every candidate not in the seen set,
 * once each, in order). Lists repeat, seen sets grow, and hosts change
 * health, capacity and load between steps, so a remembered answer is
 * checked after the set it was remembered for has been replaced.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { leastLoadedChooser } from "../../src/route/chooser.ts";
import type { AcquireRoute, RouteCommand, RouteSettings } from "../../src/route/commands.ts";
import { decideRoute } from "../../src/route/decide.ts";
import type { HostHealth } from "../../src/host/state.ts";
import { HostLoadOrder } from "../../src/host/load-order.ts";
import { evolveRoute, initialRouteState, type RouteState } from "../../src/route/state.ts";
import { IDLE_MS, ROUTE, routeEvent, T0 } from "../support/route-given.ts";

// More hosts than the load order is walked for (64), so a walk can give up and scan.
const POOL = [...Array.from({ length: 86 }, (_, i) => `h${i}`), "a", "Z", "é", "gpu-node-17.cluster.local"];

const fast: RouteSettings = { routeIdleMs: IDLE_MS, chooser: leastLoadedChooser };
// The same chooser under another identity: the decider takes its general path.
const general: RouteSettings = { routeIdleMs: IDLE_MS, chooser: { ...leastLoadedChooser } };

const host = fc.constantFrom(...POOL);
/** Candidate lists: long ones (remembered) from a few shapes that repeat, and short ones. */
const list = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(POOL, POOL.slice(0, 36), POOL.slice(50), [...POOL].reverse(), [...POOL.slice(4), "h1", "h1"]) },
  { weight: 2, arbitrary: fc.array(host, { minLength: 32, maxLength: 48 }) },
  { weight: 1, arbitrary: fc.array(host, { minLength: 0, maxLength: 6 }) },
);
const health: fc.Arbitrary<HostHealth | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ healthy: true, draining: false, maxLeases: null }) },
  { weight: 1, arbitrary: fc.constant({ healthy: true, draining: true, maxLeases: null }) },
  { weight: 1, arbitrary: fc.constant({ healthy: false, draining: false, maxLeases: null }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 3 }).map((maxLeases) => ({ healthy: true, draining: false, maxLeases })) },
  { weight: 1, arbitrary: fc.constant(undefined) },
);
// Sometimes only a few hosts were ever set: the load order is then short enough to walk to its end.
const sparseHealth = fc.oneof({ weight: 12, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: health });
const hostTable = fc
  .boolean()
  .chain((sparse) => fc.array(sparse ? sparseHealth : health, { minLength: POOL.length, maxLength: POOL.length }))
  .map((hs) => {
    const m = new Map<string, HostHealth>();
    hs.forEach((h, i) => h !== undefined && m.set(POOL[i]!, h));
    return m;
  });
const loads = fc
  .array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 4 })), { minLength: POOL.length, maxLength: POOL.length })
  .map((ls) => {
    const m = new Map<string, number>();
    ls.forEach((l, i) => l > 0 && m.set(POOL[i]!, l));
    return m;
  });

type Step =
  | {
      readonly kind: "acquire";
      readonly fp: string;
      readonly candidates: readonly string[];
      readonly hosts: Map<string, HostHealth>;
      readonly loads: Map<string, number>;
      readonly full: readonly string[];
      readonly admission: { host: string; current: boolean } | undefined;
      readonly recordReuse: boolean;
      /** Carry the load order (and a frozen list, as requests give): the walk; else the scan. */
      readonly ordered: boolean;
    }
  | { readonly kind: "candidates"; readonly hosts: readonly string[] }
  | { readonly kind: "release" };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant("acquire" as const),
      fp: fc.constantFrom("", "c1", "c2", "c3"),
      candidates: list,
      hosts: hostTable,
      loads,
      full: fc.oneof({ weight: 4, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(host, { maxLength: 4 }) }),
      admission: fc.option(fc.record({ host, current: fc.boolean() }), { nil: undefined, freq: 6 }),
      recordReuse: fc.boolean(),
      ordered: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("candidates" as const), hosts: list }) },
  { weight: 2, arbitrary: fc.constant({ kind: "release" as const }) },
);

function commandOf(s: Step, state: RouteState): RouteCommand {
  if (s.kind === "candidates") return { op: "candidates", hosts: s.hosts };
  if (s.kind === "release") return { op: "release" };
  let order: HostLoadOrder | undefined;
  if (s.ordered) {
    // What the route table's order holds at least: every host of the table, and every host with leases.
    order = new HostLoadOrder();
    for (const h of [...s.hosts.keys(), ...s.loads.keys()]) order.set(h, s.loads.get(h) ?? 0);
  }
  const command: AcquireRoute = {
    op: "acquire",
    fp: s.fp,
    model: "m",
    candidates: s.ordered ? Object.freeze([...s.candidates]) : s.candidates,
    ...(order === undefined ? {} : { order }),
    hosts: s.hosts,
    loads: s.loads,
    recordReuse: s.recordReuse,
    ...(s.full.length === 0 ? {} : { full: new Set(s.full) }),
    ...(s.admission === undefined
      ? {}
      : { admission: { host: s.admission.host, seq: 999, routeSeq: s.admission.current ? state.lastSeq : state.lastSeq + 7 } }),
  };
  return command;
}

/** Every candidate not in the seen set, once each, in order: what a recorded `seen` must say. */
function plainNewlySeen(state: RouteState, hosts: readonly string[]): string[] {
  return [...new Set(hosts.filter((h) => !state.seen.has(h)))];
}

describe("route decider fast paths", () => {
  it("decide as the general path and the plain seen check, over random histories", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 20, maxLength: 60 }), (steps) => {
        let state = initialRouteState(ROUTE);
        let at = T0;
        for (const s of steps) {
          const command = commandOf(s, state);
          const now = (at += 1000);
          const decided = decideRoute(state, command, now, fast);
          expect(decided).toEqual(decideRoute(state, command, now, general));
          if (decided.outcome !== "append") continue;
          if (command.op === "acquire" || command.op === "candidates") {
            const list = command.op === "acquire" ? command.candidates : command.hosts;
            expect((decided.data as { seen?: string[] }).seen ?? []).toEqual(plainNewlySeen(state, list));
          }
          state = evolveRoute(state, routeEvent(decided.type, decided.data as never, now));
        }
      }),
      { numRuns: 300 },
    );
  });
});
