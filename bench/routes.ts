/**
 * Route acquire benchmark: `route.acquire` requests per second through one
 * in-process leasehold service, on the reuse path (each worker asks for its
 * own existing conversation again) and on the new-placement path (each
 * request is a new conversation, placed by the chooser), with 1 and 64
 * requests in flight, beside the same-run ceiling: a trivial responder that
 * does one JetStream publish per request (message id, expected last subject
 * sequence, an event-sized payload) and nothing else.
 *
 *   npx tsx bench/routes.ts [--duration-ms 5000] [--warmup-ms 1000]
 *                           [--concurrency 1,64] [--repeats 3]
 *                           [--paths reuse,place] [--hosts 8]
 *                           [--chooser least-loaded|rendezvous]
 *                           [--systems leasehold,ceiling] [--instances N] [--json]
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { NatsConnection } from "@nats-io/nats-core";
import { resolveConfig } from "../src/config.ts";
import {
  REQUEST_TIMEOUT_MS,
  alternate,
  closedLoop,
  json,
  listOf,
  oneOf,
  markdownTable,
  median,
  parseBenchArgs,
  positiveInt,
  printJson,
  reportText,
  round,
  runBench,
  succeeded,
  windowLine,
  withBench,
  type CeilingOptions,
  type CommonSettings,
  type WindowFigures,
  type WorkFn,
} from "./support.ts";

/** The reuse path (no append) or a new placement. */
export type Path = "reuse" | "place";
type System = "leasehold" | "ceiling";

interface Settings extends CommonSettings {
  readonly paths: readonly Path[];
  readonly hosts: number;
  readonly chooser: "least-loaded" | "rendezvous";
  readonly systems: readonly System[];
  readonly json: boolean;
  /** Service instances sharing the load (their endpoints are one queue group); 2 or more show conflicts across instances. */
  readonly instances: number;
}

interface Run extends WindowFigures {
  readonly path: Path;
  readonly system: System;
  readonly concurrency: number;
  readonly repeat: number;
  readonly requestsPerSec: number;
  readonly failed: number;
  /** Events the leasehold runs appended per successful request (0 for the ceiling). */
  readonly eventsPerRequest: number;
  /** Appends that failed their expected-sequence check, per request (0 for the ceiling). */
  readonly conflictsPerRequest: number;
}

function parseSettings(): Settings {
  const { values, common } = parseBenchArgs(
    "usage: npx tsx bench/routes.ts [--duration-ms N] [--warmup-ms N] [--concurrency 1,64] [--repeats N] [--paths reuse,place] [--hosts N] [--chooser least-loaded|rendezvous] [--systems leasehold,ceiling] [--instances N] [--json]",
    {
      paths: { type: "string", default: "reuse,place" },
      hosts: { type: "string", default: "8" },
      chooser: { type: "string", default: "least-loaded" },
      systems: { type: "string", default: "leasehold,ceiling" },
      instances: { type: "string", default: "1" },
    },
  );
  return {
    ...common,
    paths: listOf<Path>("paths", "path", values.paths, ["reuse", "place"]),
    hosts: positiveInt("hosts", values.hosts),
    chooser: oneOf("chooser", "chooser", values.chooser, ["least-loaded", "rendezvous"] as const),
    systems: listOf<System>("systems", "system", values.systems, ["leasehold", "ceiling"]),
    json: values.json,
    instances: positiveInt("instances", values.instances),
  };
}

/**
 * One timed `acquire` per call, the body from `bodyOf` (a fresh conversation,
 * or the worker's own again); only successful requests are sampled.
 */
function acquireOnce(nc: NatsConnection, subject: string, bodyOf: (worker: number) => Uint8Array): WorkFn {
  return async (worker, sample) => {
    const t0 = performance.now();
    try {
      const reply = await nc.request(subject, bodyOf(worker), { timeout: REQUEST_TIMEOUT_MS });
      if (!succeeded(reply)) return 1;
      sample(performance.now() - t0);
      return 0;
    } catch {
      return 1;
    }
  };
}

const encoder = new TextEncoder();

/**
 * Request bodies `{route, fp, model, candidates}` with the candidate list
 * encoded once: the load generator shares the process with the service and
 * the ceiling, and stringifying 1,000 hosts per request would charge both
 * for work no client needs to repeat. The bytes are those JSON.stringify
 * gives for the whole object.
 */
function bodiesWith(candidates: readonly string[]): (fields: { route: string; fp: string; model: string }) => Uint8Array {
  const tail = encoder.encode(`,"candidates":${JSON.stringify(candidates)}}`);
  return (fields) => {
    const head = encoder.encode(JSON.stringify(fields).slice(0, -1));
    const body = new Uint8Array(head.length + tail.length);
    body.set(head);
    body.set(tail, head.length);
    return body;
  };
}

/** Reuse: every worker asks again for its own conversation (placed during warm-up). New placement: a new conversation every time. */
export function leaseholdRequest(nc: NatsConnection, prefix: string, path: Path, tag: string, candidates: readonly string[]): WorkFn {
  let n = 0;
  const bodyOf = bodiesWith(candidates);
  // A reuse sends its worker's one body again and again.
  const reused = new Map<number, Uint8Array>();
  return acquireOnce(nc, `${prefix}.v1.route.acquire`, (worker) => {
    if (path === "place") return bodyOf({ route: `${tag}-w${worker}`, fp: `c${++n}`, model: "m" });
    let body = reused.get(worker);
    if (body === undefined) reused.set(worker, (body = bodyOf({ route: `${tag}-w${worker}`, fp: "conversation", model: "m" })));
    return body;
  });
}

/** The ceiling: the same request body to a responder doing one JetStream publish per request. */
export function ceilingRequest(nc: NatsConnection, prefix: string, tag: string, candidates: readonly string[]): WorkFn {
  let n = 0;
  const bodyOf = bodiesWith(candidates);
  return acquireOnce(nc, `${prefix}.ceiling.v1.acquire`, (worker) => bodyOf({ route: `${tag}-w${worker}`, fp: `c${++n}`, model: "m" }));
}

/** Sets `count` healthy hosts `h0`, `h1`, ... on the service of `prefix`; returns their names. */
export async function setHosts(nc: NatsConnection, prefix: string, count: number): Promise<string[]> {
  const hosts = Array.from({ length: count }, (_, i) => `h${i}`);
  for (const host of hosts) {
    const reply = await nc.request(`${prefix}.v1.host.set`, json({ host, healthy: true }), { timeout: REQUEST_TIMEOUT_MS });
    if (!succeeded(reply)) throw new Error(`host.set ${host} failed: ${reply.string()}`);
  }
  return hosts;
}

/** The ceiling responder for route acquires: one publish per request of a RouteLeasePlaced-sized envelope. */
export function routeCeilingOptions(): CeilingOptions {
  return {
    dedupWindowMs: 120_000,
    ops: ["acquire"],
    keyField: "route",
    // The size and shape of a RouteLeasePlaced envelope.
    event: {
      type: "RouteLeasePlaced",
      v: 1,
      at: new Date().toISOString(),
      kind: "route",
      id: "place-w63",
      data: { fp: "c12345", model: "m", host: "h7", from: "", reason: "new", reused: false },
    },
    reply: () => ({ host: "h1", reused: false }),
  };
}

async function main(): Promise<void> {
  const settings = parseSettings();
  // Every connection as `leasehold serve` sets up its own (no async traces), as in bench/locks.ts.
  await withBench({ noAsyncTraces: true }, async (bench) => {
    const { prefix } = bench;
    const config = resolveConfig({ prefix, nats: bench.nats.url, routeChooser: settings.chooser });
    const service = await bench.startService(config);
    for (let i = 1; i < settings.instances; i++) await bench.startService(config);
    await bench.startCeiling(routeCeilingOptions());
    const load = await bench.connect("bench-load");
    const hosts = await setHosts(load, prefix, settings.hosts);
    // Only route events are appended to the event stream while measuring (hosts were set above).
    const routeEvents = () => service.log.lastSeq();

    const runs: Run[] = [];
    for (let repeat = 1; repeat <= settings.repeats; repeat++) {
      for (const path of settings.paths) {
        for (const concurrency of settings.concurrency) {
          for (const system of alternate<System>(settings.systems, repeat)) {
            const tag = `${path}-c${concurrency}-r${repeat}`;
            const request =
              system === "leasehold" ? leaseholdRequest(load, prefix, path, tag, hosts) : ceilingRequest(load, prefix, tag, hosts);
            const events = system === "leasehold" ? routeEvents : () => Promise.resolve(0);
            let events0 = 0;
            let conflicts0 = 0;
            const w = await closedLoop(request, concurrency, settings, bench.nats, async () => {
              events0 = await events();
              conflicts0 = bench.appendCounts().conflicts;
            });
            const events1 = await events();
            const conflicts = system === "leasehold" ? bench.appendCounts().conflicts - conflicts0 : 0;
            const run: Run = {
              path,
              system,
              concurrency,
              repeat,
              requestsPerSec: w.samples / w.seconds,
              failed: w.failedRequests,
              p50Ms: w.p50Ms,
              p99Ms: w.p99Ms,
              nodeCpuPct: w.nodeCpuPct,
              natsCpuPct: w.natsCpuPct,
              loadAvg1m: w.loadAvg1m,
              // Includes the requests still in flight when measuring stopped, so it is approximate.
              eventsPerRequest: w.samples === 0 ? 0 : (events1 - events0) / w.samples,
              conflictsPerRequest: conflicts / Math.max(1, w.samples + w.failedRequests),
            };
            runs.push(run);
            bench.progress(
              `repeat ${repeat} ${path} in-flight ${concurrency} ${system}: ${round(run.requestsPerSec)} req/s, ${windowLine(run)}, conflicts ${conflicts}, failed ${run.failed}`,
            );
          }
        }
      }
    }

    const rows = settings.paths.flatMap((path) =>
      settings.concurrency.map((concurrency) => {
        const of = (system: System) => runs.filter((r) => r.path === path && r.concurrency === concurrency && r.system === system);
        const l = of("leasehold");
        const c = of("ceiling");
        const ratios = l.map((r) => r.requestsPerSec / (c.find((x) => x.repeat === r.repeat)?.requestsPerSec ?? Number.NaN));
        return {
          path,
          concurrency,
          leasehold: round(median(l.map((r) => r.requestsPerSec))),
          leaseholdP50: round(median(l.map((r) => r.p50Ms)), 2),
          leaseholdP99: round(median(l.map((r) => r.p99Ms)), 2),
          ceiling: round(median(c.map((r) => r.requestsPerSec))),
          ceilingP50: round(median(c.map((r) => r.p50Ms)), 2),
          ratio: round(median(ratios), 2),
          p50Ratio: round(median(l.map((r) => r.p50Ms / (c.find((x) => x.repeat === r.repeat)?.p50Ms ?? Number.NaN))), 2),
          failed: l.reduce((n, r) => n + r.failed, 0) + c.reduce((n, r) => n + r.failed, 0),
        };
      }),
    );
    if (settings.json) {
      printJson({ settings, machine: bench.machine, rows, runs });
      return;
    }
    process.stdout.write(
      reportText(
        bench.machine,
        `chooser ${settings.chooser}, ${settings.hosts} hosts; ${settings.durationMs} ms per measurement after ${settings.warmupMs} ms warm-up, ${settings.repeats} interleaved repeats (medians)`,
        markdownTable(
          [
            "path",
            "in flight",
            "leasehold acquires/s",
            "p50 ms",
            "p99 ms",
            "ceiling req/s",
            "ceiling p50 ms",
            "leasehold/ceiling",
            "failed",
          ],
          rows.map((r) => [r.path, r.concurrency, r.leasehold, r.leaseholdP50, r.leaseholdP99, r.ceiling, r.ceilingP50, r.ratio, r.failed]),
        ),
        markdownTable(
          [
            "repeat",
            "path",
            "in flight",
            "system",
            "req/s",
            "p50 ms",
            "p99 ms",
            "events/request",
            "conflicts/request",
            "node CPU %",
            "nats-server CPU %",
            "load 1m",
            "failed",
          ],
          runs.map((r) => [
            r.repeat,
            r.path,
            r.concurrency,
            r.system,
            round(r.requestsPerSec),
            round(r.p50Ms, 2),
            round(r.p99Ms, 2),
            r.system === "ceiling" ? "1" : round(r.eventsPerRequest, 3),
            r.system === "ceiling" ? "–" : round(r.conflictsPerRequest, 4),
            round(r.nodeCpuPct),
            round(r.natsCpuPct),
            r.loadAvg1m,
            r.failed,
          ]),
        ),
      ),
    );
  });
}

// bench/request-cost.ts imports this file's workload; the bench itself runs only when this file is the one started.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) runBench(main);
