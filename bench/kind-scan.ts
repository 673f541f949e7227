/**
 * A kind's backlog read two ways over one stream: by a follower whose
 * consumer the server filters on the kind's subjects (how a projection
 * caught up after its snapshot before src/events/scan-plan.ts), and by the
 * event log's `scan`, which reads the whole stream and keeps the kind's
 * messages where the kind holds most of it. The stream holds `--events`
 * lock events on `--names` names (and one proxy event in 50); the backlog
 * is the second half of it, as after a snapshot. Rounds alternate the two.
 *
 *   npx tsx bench/kind-scan.ts [--events 120000] [--names 5000] [--rounds 3] [--json]
 */
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { JetStreamEventLog } from "../src/events/jetstream-event-log.ts";
import { Subjects } from "../src/contract/subjects.ts";
import {
  markdownTable,
  median,
  parseOwnArgs,
  positiveInt,
  printJson,
  round,
  runBench,
  startBenchNats,
  waitForQuietMachine,
} from "./support.ts";

async function main(): Promise<void> {
  const values = parseOwnArgs("usage: npx tsx bench/kind-scan.ts [--events 120000] [--names 5000] [--rounds 3] [--json]", {
    events: { type: "string", default: "120000" },
    names: { type: "string", default: "5000" },
    rounds: { type: "string", default: "3" },
    json: { type: "boolean", default: false },
  });
  const events = positiveInt("events", values.events);
  const names = positiveInt("names", values.names);
  const rounds = positiveInt("rounds", values.rounds);
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  const quiet = await waitForQuietMachine(progress);
  const nats = await startBenchNats();
  const nc = await connect({ servers: nats.url, name: "kind-scan-bench", noAsyncTraces: true });
  try {
    const subjects = new Subjects("kindscan");
    const log = await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
    const js = jetstream(nc);
    const body = new TextEncoder().encode(
      JSON.stringify({
        type: "LockAcquired",
        v: 1,
        at: new Date().toISOString(),
        kind: "lock",
        id: "job",
        data: { owner: "worker-17", ttlMs: 10_000, generation: 3 },
      }),
    );
    progress(`writing ${events} events on ${names} names`);
    const batch: Promise<unknown>[] = [];
    for (let i = 0; i < events; i++) {
      const subject = i % 50 === 49 ? subjects.event("proxy", `p${i % 100}`) : subjects.event("lock", `job${i % names}`);
      batch.push(js.publish(subject, body));
      if (batch.length >= 512) await Promise.all(batch.splice(0));
    }
    await Promise.all(batch);
    const filter = subjects.eventsOfKind("lock");
    const last = await log.lastSubjectSeq(filter);
    const fromSeq = Math.floor(events / 2);
    const followed = async (): Promise<{ ms: number; n: number }> => {
      const started = performance.now();
      let n = 0;
      let reached!: () => void;
      const done = new Promise<void>((resolve) => (reached = resolve));
      const following = await log.follow(
        fromSeq,
        (m) => {
          n++;
          if (m.seq >= last) reached();
        },
        { filter },
      );
      await done;
      await following.stop();
      return { ms: performance.now() - started, n };
    };
    const scanned = async (): Promise<{ ms: number; n: number }> => {
      const started = performance.now();
      let n = 0;
      await log.scan({ fromSeq, toSeq: last, filter }, () => void n++, 30_000);
      return { ms: performance.now() - started, n };
    };
    const rows: { round: number; way: string; ms: number; n: number }[] = [];
    for (let r = 0; r < rounds; r++) {
      const ways =
        r % 2 === 0
          ? ([
              ["follower, server-filtered", followed],
              ["scan", scanned],
            ] as const)
          : ([
              ["scan", scanned],
              ["follower, server-filtered", followed],
            ] as const);
      for (const [way, read] of ways) {
        const { ms, n } = await read();
        progress(`round ${r + 1}: ${way} ${Math.round(ms)} ms, ${n} events`);
        rows.push({ round: r + 1, way, ms: round(ms, 0), n });
      }
    }
    const med = (way: string) => median(rows.filter((x) => x.way === way).map((x) => x.ms));
    const ratio = round(med("follower, server-filtered") / med("scan"), 1);
    if (values.json) printJson({ quiet, natsServer: nats.version, events, names, fromSeq, rows, ratio });
    else
      process.stdout.write(
        `${markdownTable(
          ["round", "read", "ms", "lock events"],
          rows.map((x) => [x.round, x.way, x.ms, x.n]),
        )}\n` +
          `nats-server ${nats.version}; ${events} events, ${names} names, from ${fromSeq}; follower ÷ scan (medians): ${ratio} (load ${quiet.load1m} at start)\n`,
      );
  } finally {
    await nc.drain().catch(() => undefined);
    await nats.stop();
  }
}

runBench(main);
