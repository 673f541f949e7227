/**
 * Does a start read the stream once per kind? Times a kind projection's
 * start (with a fold that only counts, so the follower and the decoding are
 * what is measured) for each kind's filter, and once for every event
 * (`<prefix>.events.>`, what one pass for all kinds would read), in
 * interleaved rounds over the stream `bench/restart.ts` wrote and keeps.
 *
 *   npx tsx bench/kind-followers.ts [--data-dir DIR] [--rounds 2] [--json]
 *
 * Run `bench/restart.ts` first (same `--data-dir`) to write the stream.
 */
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { connect } from "@nats-io/transport-node";
import { startLocalNatsServer } from "../src/cluster/local-cluster.ts";
import { ACTOR_KINDS, Subjects, type ActorKind } from "../src/contract/subjects.ts";
import { JetStreamEventLog } from "../src/events/jetstream-event-log.ts";
import { KindProjection, type KindFold } from "../src/projections/kind-projection.ts";
import { markdownTable, median, parseOwnArgs, positiveInt, printJson, runBench } from "./support.ts";

/** The restart bench's stream prefix. */
const PREFIX = "rbench2";

/** A fold that counts each id's events. */
const counting = (kind: ActorKind): KindFold<number> => ({
  kind,
  foldVersion: 1,
  initialState: () => 0,
  evolve: (n) => n + 1,
  replyFor: () => ({}),
});

async function main(): Promise<void> {
  const values = parseOwnArgs("usage: npx tsx bench/kind-followers.ts [--data-dir DIR] [--rounds 2] [--json]", {
    "data-dir": { type: "string", default: join(tmpdir(), "leasehold-bench-restart") },
    rounds: { type: "string", default: "2" },
    json: { type: "boolean", default: false },
  });
  const rounds = positiveInt("rounds", values.rounds);
  const server = await startLocalNatsServer({ dir: values["data-dir"] });
  const nc = await connect({ servers: server.urls[0]!, name: "kind-followers-bench", noAsyncTraces: true });
  try {
    const subjects = new Subjects(PREFIX);
    const log = await JetStreamEventLog.attach(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
    const logger = pino({ level: "warn" });
    const filters = new Map<string, [ActorKind, string]>(ACTOR_KINDS.map((k) => [k, [k, subjects.eventsOfKind(k)]]));
    filters.set("all events", ["lock", subjects.allEvents]);
    const ms = new Map<string, number[]>([...filters.keys()].map((name) => [name, []]));
    const seen = new Map<string, number>();
    for (let r = 0; r < rounds; r++) {
      for (const [name, [kind, filter]] of filters) {
        const projection = new KindProjection({ log, filter, fold: counting(kind), logger, startTimeoutMs: 600_000 });
        const t0 = performance.now();
        await projection.start();
        ms.get(name)!.push(performance.now() - t0);
        seen.set(name, projection.seq === 0 ? 0 : projection.size);
        await projection.stop();
      }
    }
    const rows = [...ms].map(([name, samples]) => ({ name, ids: seen.get(name) ?? 0, medianMs: Math.round(median(samples)), samples }));
    if (values.json) printJson({ rounds, rows });
    else
      process.stdout.write(
        `${markdownTable(
          ["filter", "ids", "median start ms", "each round ms"],
          rows.map((r) => [r.name, r.ids, r.medianMs, r.samples.map(Math.round).join(", ")]),
        )}\n`,
      );
  } finally {
    await nc.close();
    await server.stop();
  }
}

runBench(main);
