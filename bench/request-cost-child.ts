/**
 * One responder alone in a process, for bench/request-cost.ts: either the
 * leasehold service or the one-publish ceiling responder, on a connection set
 * up as the service's is. Prints `{"ready":true}` on stdout once it answers,
 * and exits on SIGTERM. Nothing else runs here, so this process's CPU time
 * and allocation are the responder's alone.
 *
 *   node <built>/bench/request-cost-child.js --system leasehold|ceiling --nats <url> --prefix <p>
 *                                            [--workload locks|proxies|place]
 *
 * `--workload` picks the ceiling's envelope and subjects (the service
 * answers every workload; the parent registers its proxies or hosts).
 */
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { pino } from "pino";
import { resolveConfig } from "../src/config.ts";
import { startService } from "../src/service/start-service.ts";
import { lockCeilingOptions } from "./locks.ts";
import { proxyCeilingOptions } from "./proxies.ts";
import { routeCeilingOptions } from "./routes.ts";
import { startCeiling, type CeilingOptions } from "./support.ts";

const { values } = parseArgs({
  options: {
    system: { type: "string" },
    nats: { type: "string" },
    prefix: { type: "string" },
    "ttl-ms": { type: "string", default: "10000" },
    workload: { type: "string", default: "locks" },
  },
  strict: true,
});
const nc = await connect({ servers: (values.nats ?? "").split(","), name: `request-cost-${values.system}`, noAsyncTraces: true });
const config = resolveConfig({ prefix: values.prefix, nats: values.nats, lockTtlMs: values["ttl-ms"], maxTtlMs: "30000" });
const stop =
  values.system === "leasehold"
    ? await startService({ nc, config, logger: pino({ level: "warn" }, pino.destination(2)) })
    : await startCeiling(nc, config.prefix, ceilingOptions(values.workload, config.dedupWindowMs));
/** The ceiling of a workload: the envelope and subjects its requests publish to. */
function ceilingOptions(workload: string | undefined, dedupWindowMs: number): CeilingOptions {
  if (workload === "proxies") return proxyCeilingOptions(dedupWindowMs);
  if (workload === "place") return routeCeilingOptions();
  return lockCeilingOptions(dedupWindowMs, 1);
}

process.once("SIGTERM", () => {
  void stop
    .stop()
    .then(() => nc.drain())
    .finally(() => process.exit(0));
});
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
