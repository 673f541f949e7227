/**
 * Prompt-cache affinity against balance, for the route choosers (docs/routes.md,
 * "Choosers compared"): 8 hosts, 200 routes of 20 conversations each (one
 * model), placed one new conversation at a time in a seeded random order
 * of arrival, through the service's own pure choosers (the function the
 * route decider calls, with the active leases of every host as it counts
 * them; no NATS, no log). For each chooser:
 *
 * - the share of a route's conversations on its most used host (1 = all on
 *   one host: its prompt is cached once), mean and lowest over the routes;
 * - the hosts a route's conversations use (the copies of its prompt cache);
 * - the highest host's active leases over the mean (1 = perfectly even).
 *
 *   npx tsx bench/route-choosers.ts [--hosts 8] [--routes 200] [--conversations 20] [--seed 1] [--json]
 */
import { boundedHashChooser, leastLoadedChooser, rendezvousChooser, type RouteChooser } from "../src/route/chooser.ts";
import { prng } from "../test/tools/support/workload.ts";

const args = process.argv.slice(2);
const arg = (name: string, fallback: number): number => {
  const i = args.indexOf(`--${name}`);
  const value = i >= 0 ? Number(args[i + 1]) : fallback;
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`--${name}: a whole number >= 1`);
  return value;
};
const HOSTS = arg("hosts", 8);
const ROUTES = arg("routes", 200);
const CONVERSATIONS = arg("conversations", 20);
const SEED = arg("seed", 1);
const json = args.includes("--json");

interface Row {
  readonly chooser: string;
  readonly meanTopShare: number;
  readonly lowestTopShare: number;
  readonly meanHostsPerRoute: number;
  readonly maxOverMean: number;
}

function run(name: string, chooser: RouteChooser): Row {
  const hosts = Array.from({ length: HOSTS }, (_, i) => `gpu-${i + 1}`);
  const arrivals: { route: string; fp: string }[] = [];
  for (let r = 0; r < ROUTES; r++) for (let c = 0; c < CONVERSATIONS; c++) arrivals.push({ route: `route-${r}`, fp: `conv-${c}` });
  const next = prng(SEED);
  for (let i = arrivals.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [arrivals[i], arrivals[j]] = [arrivals[j]!, arrivals[i]!];
  }
  const active = new Map<string, number>();
  const perRoute = new Map<string, Map<string, number>>();
  for (const { route, fp } of arrivals) {
    const host = chooser.choose({ route, fp, model: "llama-3-70b" }, hosts, active)!;
    active.set(host, (active.get(host) ?? 0) + 1);
    const counts = perRoute.get(route) ?? new Map<string, number>();
    counts.set(host, (counts.get(host) ?? 0) + 1);
    perRoute.set(route, counts);
  }
  const topShares = [...perRoute.values()].map((counts) => Math.max(...counts.values()) / CONVERSATIONS);
  const mean = arrivals.length / HOSTS;
  return {
    chooser: name,
    meanTopShare: topShares.reduce((s, x) => s + x, 0) / topShares.length,
    lowestTopShare: Math.min(...topShares),
    meanHostsPerRoute: [...perRoute.values()].reduce((s, c) => s + c.size, 0) / perRoute.size,
    maxOverMean: Math.max(...hosts.map((h) => active.get(h) ?? 0)) / mean,
  };
}

const rows = [
  run("least-loaded", leastLoadedChooser),
  run("rendezvous", rendezvousChooser),
  ...[1.1, 1.25, 1.5, 2].map((c) => run(`bounded-hash, c = ${c}`, boundedHashChooser(c))),
];

if (json) {
  console.log(
    JSON.stringify({ at: new Date().toISOString(), hosts: HOSTS, routes: ROUTES, conversations: CONVERSATIONS, seed: SEED, rows }),
  );
} else {
  console.log(`${HOSTS} hosts, ${ROUTES} routes of ${CONVERSATIONS} conversations, seed ${SEED} (${new Date().toISOString()})\n`);
  console.log("| chooser | route's top-host share, mean | lowest | hosts per route, mean | busiest host / mean |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  for (const r of rows) {
    console.log(
      `| ${r.chooser} | ${r.meanTopShare.toFixed(2)} | ${r.lowestTopShare.toFixed(2)} | ${r.meanHostsPerRoute.toFixed(2)} | ${r.maxOverMean.toFixed(3)} |`,
    );
  }
}
