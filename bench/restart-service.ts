/**
 * The service alone in a process, for bench/restart.ts: connects, runs
 * `startService` (which resolves once every projection has caught up with
 * the stream), prints one JSON line `{startServiceMs, projections}` on stdout,
 * and on SIGTERM stops the service (saving the projections' snapshots),
 * prints `{stopMs, unanswered}` and exits. Nothing else runs in this process,
 * so its RSS is the service's.
 *
 *   node --import tsx bench/restart-service.ts --nats <url> --prefix <p> [--max-ttl-ms N]
 */
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { pino } from "pino";
import { resolveConfig } from "../src/config.ts";
import { startService, type RunningService } from "../src/service/start-service.ts";

const { values } = parseArgs({
  options: {
    nats: { type: "string" },
    prefix: { type: "string" },
    "max-ttl-ms": { type: "string", default: "30000" },
  },
  strict: true,
});
const line = (fields: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(fields)}\n`);

const nc = await connect({ servers: (values.nats ?? "").split(","), name: "leasehold-restart-bench", noAsyncTraces: true });
const config = resolveConfig({ prefix: values.prefix, nats: values.nats, maxTtlMs: values["max-ttl-ms"], lockTtlMs: values["max-ttl-ms"] });
// Warnings (an ignored snapshot, a failed save) go to stderr, where the bench keeps them.
const logger = pino({ level: "warn" }, pino.destination(2));
// The handler comes first: endpoints answer before startService resolves (the durable-command consumer
// starts last), and a SIGTERM in that window must still stop the service rather than kill the process.
const ready: { service?: Promise<RunningService> } = {};
process.once("SIGTERM", () => {
  const t1 = performance.now();
  void ready
    .service!.then((service) => service.stop())
    .then(async (unanswered) => {
      await nc.drain().catch(() => undefined);
      line({ stopMs: performance.now() - t1, unanswered });
      process.exit(0);
    })
    .catch((e: Error) => {
      line({ stopError: e.message });
      process.exit(1);
    });
});
const t0 = performance.now();
ready.service = startService({ nc, config, logger });
const service = await ready.service;
const startServiceMs = performance.now() - t0;
// The runtime before projection snapshots has no projections(), and older commits call it `host`: report what there is.
type Projections = {
  projections?: () => { kind: string; size: number; seq: number; startedFromSeq?: number; backlogOnWorker?: boolean }[];
};
const parts = service as unknown as { runtime?: Projections; host?: Projections };
const host = parts.runtime ?? parts.host ?? {};
line({
  startServiceMs,
  projections: host
    .projections?.()
    .map((p) => ({ kind: p.kind, ids: p.size, seq: p.seq, fromSnapshotSeq: p.startedFromSeq, backlogOnWorker: p.backlogOnWorker })),
});
