/**
 * The flooding client of bench/fairness.ts, alone in a process so that its
 * own work does not sit in the measuring client's event loop: lock
 * acquire+release pairs on names of its own, `--in-flight` at once, from one
 * connection (one client to the service), until SIGTERM. Prints `{"ready":
 * true}` after its first 200 pairs and, at SIGTERM, one JSON line with its
 * pairs, the UNAVAILABLE answers it got and the seconds it ran. With
 * `--burst N` it instead sends N acquires at once without waiting for any
 * answer (a client in a retry loop), ready as soon as they are sent, and
 * counts the answers as they come. With `--durable N` it publishes N durable
 * `lock.acquire` commands (each stored before it is ready: JetStream's
 * acknowledgement) and the service works them off while the other measures.
 *
 *   node --import tsx bench/flood-worker.ts --nats <url> --prefix <p> [--in-flight 64] [--burst N] [--durable N]
 */
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { json, succeeded } from "./support.ts";

const { values } = parseArgs({
  options: {
    nats: { type: "string" },
    prefix: { type: "string" },
    "in-flight": { type: "string", default: "64" },
    burst: { type: "string", default: "0" },
    durable: { type: "string", default: "0" },
  },
  strict: true,
});
const prefix = values.prefix ?? "leasehold";
const nc = await connect({ servers: (values.nats ?? "").split(","), name: "leasehold-flood-worker", noAsyncTraces: true });
const counts = { pairs: 0, unavailable: 0, errors: 0 };
const started = performance.now();
let stopping = false;
let next = 0;

process.once("SIGTERM", () => {
  stopping = true;
  process.stdout.write(`${JSON.stringify({ ...counts, seconds: (performance.now() - started) / 1000 })}\n`, () => process.exit(0));
});

/** One pair on a name nobody else uses; counts what it got. */
async function pair(name: string): Promise<void> {
  const acquired = await nc.request(`${prefix}.v1.lock.acquire`, json({ name, owner: "flood", ttlMs: 30_000 }), { timeout: 10_000 });
  if (!succeeded(acquired)) {
    if (acquired.json<{ error?: { code?: string } }>().error?.code === "UNAVAILABLE") counts.unavailable++;
    else counts.errors++;
    return;
  }
  const etag = acquired.json<{ lease: { etag: string } }>().lease.etag;
  const released = await nc.request(`${prefix}.v1.lock.release`, json({ name, etag }), { timeout: 10_000 });
  if (succeeded(released)) counts.pairs++;
  else counts.errors++;
  if (counts.pairs === 200) process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
}

const durable = Number(values.durable);
if (durable > 0) {
  const js = jetstream(nc);
  // Acknowledged in windows of 512: the stream holds them all before the measuring starts.
  for (let from = 0; from < durable; from += 512) {
    const window = Array.from({ length: Math.min(512, durable - from) }, (_, i) =>
      js.publish(
        `${prefix}.cmd.lock.acquire`,
        json({ name: `durable-${from + i}`, owner: "flood", ttlMs: 30_000, requestId: `durable-${from + i}` }),
      ),
    );
    await Promise.all(window);
  }
  counts.pairs = durable;
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
}

const burst = Number(values.burst);
if (burst > 0) {
  for (let i = 0; i < burst; i++) {
    nc.request(`${prefix}.v1.lock.acquire`, json({ name: `burst-${i}`, owner: "flood", ttlMs: 30_000 }), { timeout: 120_000 }).then(
      (reply) => {
        if (succeeded(reply)) counts.pairs++;
        else if (reply.json<{ error?: { code?: string } }>().error?.code === "UNAVAILABLE") counts.unavailable++;
        else counts.errors++;
      },
      () => counts.errors++,
    );
  }
  await nc.flush();
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
}

await Promise.all(
  Array.from({ length: burst > 0 || durable > 0 ? 0 : Number(values["in-flight"]) }, async () => {
    while (!stopping) await pair(`flood-${next++}`).catch(() => counts.errors++);
  }),
);
