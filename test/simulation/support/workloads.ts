/**
 * The clients of each kind, as fast-check draws them: a few clients, each a
 * short script of operations sent in order, each operation delivered as its
 * {@link Delivery} says. Scripts use what earlier answers told them (a lock's
 * etag, a proxy lease's id), as real clients do.
 */
import fc from "fast-check";
import type { Delivery, SimClients } from "./clients.ts";
import type { Workload } from "./simulation.ts";

const weighted = <T>(common: T, rare: readonly T[], commonWeight: number) =>
  fc.oneof({ weight: commonWeight, arbitrary: fc.constant(common) }, ...rare.map((r) => ({ weight: 1, arbitrary: fc.constant(r) })));

/** How an operation is delivered: slots of the first send and its retries, and whether it is duplicated. */
export const deliveryArb: fc.Arbitrary<Delivery> = fc.record({
  slots: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 3 }),
  duplicate: weighted<Delivery["duplicate"]>("none", ["concurrent", "late"], 4),
});

/** One lock operation of a client's script. */
export interface LockStep {
  readonly op: "acquire" | "renew" | "release" | "get" | "reset";
  readonly lock: string;
  readonly ttlMs: number;
  readonly delivery: Delivery;
}

/** Lock clients: 2–3 owners, up to 4 operations each, on one or two locks. */
export const lockPlanArb: fc.Arbitrary<LockStep[][]> = fc.array(
  fc.array(
    fc.record({
      op: fc.oneof(
        { weight: 4, arbitrary: fc.constant("acquire" as const) },
        { weight: 2, arbitrary: fc.constant("renew" as const) },
        { weight: 2, arbitrary: fc.constant("release" as const) },
        { weight: 1, arbitrary: fc.constant("get" as const) },
        { weight: 1, arbitrary: fc.constant("reset" as const) },
      ),
      lock: fc.constantFrom("a", "b"),
      ttlMs: fc.integer({ min: 500, max: 6000 }),
      delivery: deliveryArb,
    }),
    { minLength: 1, maxLength: 4 },
  ),
  { minLength: 2, maxLength: 3 },
);

/** Runs every lock client's script concurrently. */
export function lockWorkload(plan: readonly LockStep[][]): Workload {
  return (clients: SimClients) =>
    Promise.all(
      plan.map(async (steps, c) => {
        const owner = `o${c}`;
        const etags = new Map<string, string>();
        for (const step of steps) {
          const name = step.lock;
          const etag = etags.get(name) ?? "none";
          const body =
            step.op === "acquire"
              ? { name, owner, ttlMs: step.ttlMs }
              : step.op === "renew"
                ? { name, owner, etag, ttlMs: step.ttlMs }
                : step.op === "release"
                  ? { name, etag }
                  : { name };
          const record = await clients.run(owner, `lock.${step.op}`, body, step.delivery);
          if (record.result.status === "ok" && (step.op === "acquire" || step.op === "renew")) {
            etags.set(name, String((record.result.body.lease as { etag: string }).etag));
          }
        }
      }),
    );
}

/** One proxy operation of a client's script. */
export interface ProxyStep {
  readonly op: "acquire" | "release" | "report";
  readonly target: string;
  readonly ttlMs: number;
  readonly delivery: Delivery;
}

/** Proxy fleet and clients: 1–2 proxies with caps of 1–2, 2–3 clients of up to 4 operations. */
export interface ProxyPlan {
  readonly caps: readonly number[];
  readonly clients: readonly ProxyStep[][];
}

export const proxyPlanArb: fc.Arbitrary<ProxyPlan> = fc.record({
  caps: fc.array(fc.integer({ min: 1, max: 2 }), { minLength: 1, maxLength: 2 }),
  clients: fc.array(
    fc.array(
      fc.record({
        op: fc.oneof(
          { weight: 5, arbitrary: fc.constant("acquire" as const) },
          { weight: 2, arbitrary: fc.constant("release" as const) },
          { weight: 1, arbitrary: fc.constant("report" as const) },
        ),
        target: fc.constantFrom("", "t1"),
        ttlMs: fc.integer({ min: 500, max: 8000 }),
        delivery: deliveryArb,
      }),
      { minLength: 1, maxLength: 4 },
    ),
    { minLength: 2, maxLength: 3 },
  ),
});

/** Registers the proxies (each until the answer is known). */
export function proxySetup(plan: ProxyPlan): Workload {
  return async (clients) => {
    for (const [i, maxLeases] of plan.caps.entries()) {
      await clients.run("admin", "proxy.register", { proxy: `p${i}`, maxLeases, latencyMs: 10 * i, labels: {}, healthy: true }, SETUP);
    }
  };
}

/** Runs every proxy client's script concurrently. */
export function proxyWorkload(plan: ProxyPlan): Workload {
  return (clients) =>
    Promise.all(
      plan.clients.map(async (steps, c) => {
        const client = `c${c}`;
        const leases: string[] = [];
        for (const step of steps) {
          if (step.op === "acquire") {
            const record = await clients.run(client, "proxy.acquire", { ttlMs: step.ttlMs, target: step.target }, step.delivery);
            if (record.result.status === "ok") leases.push((record.result.body.lease as { id: string }).id);
          } else if (leases.length > 0) {
            const leaseId = step.op === "release" ? leases.shift()! : leases[0]!;
            const body = step.op === "release" ? { leaseId } : { leaseId, result: "rate_limited", target: step.target };
            await clients.run(client, `proxy.${step.op}`, body, step.delivery);
          }
        }
      }),
    );
}

/** One route acquisition of a client's script. */
export interface RouteStep {
  readonly route: string;
  readonly fp: string;
  readonly candidates: readonly string[];
  readonly delivery: Delivery;
}

const HOSTS = ["h0", "h1", "h2"];

/** Route clients: 2–3 clients, up to 4 acquisitions each over two routes, two fingerprints and subsets of three hosts. */
export const routePlanArb: fc.Arbitrary<RouteStep[][]> = fc.array(
  fc.array(
    fc.record({
      route: fc.constantFrom("r0", "r1"),
      fp: fc.constantFrom("", "x"),
      candidates: fc.subarray(HOSTS, { minLength: 1 }),
      delivery: deliveryArb,
    }),
    { minLength: 1, maxLength: 4 },
  ),
  { minLength: 2, maxLength: 3 },
);

/** The setup's sends: every slot in turn until the answer is known. */
const SETUP: Delivery = { slots: [0, 1, 0, 1, 0, 1], duplicate: "none" };

/** Marks every host healthy. */
export const routeSetup: Workload = async (clients) => {
  for (const host of HOSTS) await clients.run("admin", "host.set", { host, healthy: true }, SETUP);
};

/** Runs every route client's script concurrently. */
export function routeWorkload(plan: readonly RouteStep[][]): Workload {
  return (clients) =>
    Promise.all(
      plan.map(async (steps, c) => {
        for (const step of steps) {
          await clients.run(
            `c${c}`,
            "route.acquire",
            { route: step.route, fp: step.fp, model: "m", candidates: step.candidates },
            step.delivery,
          );
        }
      }),
    );
}
