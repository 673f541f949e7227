/**
 * How fast the tools read the stream, against a raw ordered-consumer read of
 * the same stream: N simulated events (every kind, the real deciders) are
 * written into a private nats-server on loopback; then, in turn, the raw read
 * (no decoding), `replay`'s fold and `audit`'s checks. A developer's tool for
 * the figures in docs/performance.md; not part of `npm run bench`.
 *
 *   npx tsx bench/tools-read.ts [--events 200000] [--repeats 3]
 */
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import { JetStreamEventLog, Subjects } from "../src/events/index.ts";
import { auditSource, auditStream, foldSource, foldStream, natsSource } from "../src/tools/index.ts";
import { simulateWorkload } from "../test/tools/support/workload.ts";
import { median, round, startBenchNats } from "./support.ts";

const { values } = parseArgs({ options: { events: { type: "string", default: "200000" }, repeats: { type: "string", default: "3" } } });
const events = Number(values.events);
const repeats = Number(values.repeats);

const nats = await startBenchNats();
try {
  const sim = await simulateWorkload({ events, seed: 7 });
  const subjects = new Subjects("bench");
  const nc = await connect({ servers: nats.url, name: "bench-tools-read" });
  const log = await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
  const js = jetstream(nc);
  const from = `${sim.subjects.prefix}.events.`;
  let pending: Promise<unknown>[] = [];
  for (const m of sim.log.messages.slice(0, events)) {
    pending.push(js.publish(`bench.events.${m.subject.slice(from.length)}`, m.payload));
    if (pending.length >= 500) {
      await Promise.all(pending);
      pending = [];
    }
  }
  await Promise.all(pending);
  const total = await log.lastSeq();

  const raw = async (): Promise<void> => {
    const consumer = await js.consumers.get(subjects.eventStream, {
      filter_subjects: subjects.allEvents,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: 1,
    });
    const messages = await consumer.consume({ max_messages: 1024 });
    let n = 0;
    for await (const m of messages) {
      n += m.data.length > 0 ? 1 : 0;
      if (m.info.pending === 0) break;
    }
    await messages.close();
    if (n !== total) throw new Error(`raw read ${n} of ${total}`);
  };
  const audit = { cooldownMs: sim.config.cooldownMs, maxTtlMs: sim.config.maxTtlMs };
  const runs: Record<string, () => Promise<void>> = {
    "raw ordered consumer": raw,
    "replay fold (readStream, per message)": async () => void (await foldStream(log.readStream(), subjects)),
    "audit (readStream, per message)": async () => void (await auditStream(log.readStream(), subjects, audit)),
    "replay fold (natsSource)": async () => void (await foldSource(natsSource(nc, subjects), subjects)),
    "audit (natsSource)": async () => void (await auditSource(natsSource(nc, subjects), subjects, audit)),
  };
  const times = new Map<string, number[]>();
  for (let i = 0; i < repeats; i++) {
    for (const [name, run] of Object.entries(runs)) {
      const t0 = performance.now();
      await run();
      times.set(name, [...(times.get(name) ?? []), performance.now() - t0]);
    }
  }
  const rawMs = median(times.get("raw ordered consumer")!);
  console.log(`${total} events, median of ${repeats}`);
  for (const [name, ms] of times) {
    const m = median(ms);
    console.log(`${name.padEnd(40)} ${round(m / 1000, 2)} s  ${round(total / (m / 1000))} events/s  ${round(rawMs / m, 2)} of raw`);
  }
  await nc.close();
} finally {
  await nats.stop();
}
