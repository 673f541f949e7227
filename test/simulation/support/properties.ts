/**
 * The simulation properties, one per kind: fast-check draws a schedule (its
 * scheduler), a fault scenario and the kind's clients; the run must leave no
 * problem. The same properties, given a {@link Mutation}, are how the
 * mutation checks show that a broken runtime is caught.
 */
import fc from "fast-check";
import { noSetup, scenarioArb, simulate, type Scenario, type SimOutcome } from "./simulation.ts";
import type { Mutation, SimKind } from "./sim-cluster.ts";
import {
  lockPlanArb,
  lockWorkload,
  proxyPlanArb,
  proxySetup,
  proxyWorkload,
  routePlanArb,
  routeSetup,
  routeWorkload,
} from "./workloads.ts";

/** Called with every run's outcome (figures). */
export type OnRun = (outcome: SimOutcome) => void;

const check = (outcome: SimOutcome, onRun: OnRun | undefined): void => {
  onRun?.(outcome);
  if (outcome.problems.length > 0) throw new Error(outcome.problems.join("\n"));
};

/** The property of `kind`, optionally on a mutated runtime. */
export function simulationProperty(kind: SimKind, options: { onRun?: OnRun; mutation?: Mutation } = {}): SimProperty {
  const { onRun, mutation } = options;
  return kindProperty(kind, onRun, mutation);
}

/** A simulation property (its third value is the kind's clients). */
export type SimProperty = fc.IAsyncPropertyWithHooks<[fc.Scheduler, Scenario, unknown]>;

function kindProperty(kind: SimKind, onRun: OnRun | undefined, mutation: Mutation | undefined) {
  switch (kind) {
    case "lock":
      return fc.asyncProperty(fc.scheduler(), scenarioArb(), lockPlanArb, async (s, scenario, plan) =>
        check(await simulate(s, "lock", scenario, noSetup, lockWorkload(plan), mutation), onRun),
      );
    case "proxy":
      return fc.asyncProperty(fc.scheduler(), scenarioArb(), proxyPlanArb, async (s, scenario, plan) =>
        check(await simulate(s, "proxy", scenario, proxySetup(plan), proxyWorkload(plan), mutation), onRun),
      );
    case "route":
      return fc.asyncProperty(fc.scheduler(), scenarioArb(), routePlanArb, async (s, scenario, plan) =>
        check(await simulate(s, "route", scenario, routeSetup, routeWorkload(plan), mutation), onRun),
      );
  }
}
