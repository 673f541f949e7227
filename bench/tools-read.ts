/**
 * How fast the tools read the stream, against a raw ordered-consumer read of
 * the same stream: N events of simulated traffic (every kind, the real
 * deciders) are written into a nats-server on loopback; then, interleaved repeat after
 * repeat, the raw read (no decoding), `replay`'s fold and `audit`'s checks,
 * each from the first sequence to the last. A developer's tool for the
 * figures in docs/performance.md; not part of `npm run bench`.
 *
 *   npx tsx bench/tools-read.ts [--events 1000000] [--base 100000] [--repeats 3]
 *                               [--reads raw,replay,audit,replay-worker,audit-worker] [--data-dir DIR] [--rebuild] [--json] [--dist]
 *
 * Simulating a million events takes most of an hour on a busy 2-core
 * machine, so `--base` events are simulated and the stream is made of copies
 * of that history, each with its own actors (every actor and lease name gets
 * the copy's suffix), one after the other: each actor's history is a real
 * one, and the stream is as long as asked.
 *
 * The server's store is kept in `--data-dir` (default
 * `<tmp>/leasehold-bench-tools-read`), so the stream (minutes to simulate and
 * write at 1,000,000 events) is written once and reused by later runs with
 * the same `--events`; `--rebuild` writes it again. `--reads` may add
 * `raw-callback` (the tools' own read, `natsSource`, with nothing done per
 * message: what is left when decoding and folding cost nothing), and
 * `replay-stream` and `audit-stream`: the per-message `readStream` path the
 * tools used before `natsSource`; and `audit-one-worker` and `audit-split`:
 * the audit's checks on one worker, or split over two by kind
 * (src/tools/split-audit.ts), whatever the machine's cores (`audit-worker`
 * splits them from three cores on). `replay` and `audit` fold on one thread,
 * `replay-worker` and `audit-worker` on a worker thread (src/tools/worker-read.ts,
 * what the commands do by default for long reads on a multi-core machine),
 * bundled from src/, or with `--dist` from the built dist/. The load average is recorded before every
 * read, since the figures are only comparable within one run.
 */
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { startLocalNatsServer } from "../src/cluster/local-cluster.ts";
import { encodeEvent, type EventEnvelope } from "../src/events/envelope.ts";
import { JetStreamEventLog } from "../src/events/jetstream-event-log.ts";
import { Subjects } from "../src/contract/subjects.ts";
import * as workerRead from "../src/tools/worker-read.ts";
import { auditSource, auditStream } from "../src/tools/audit.ts";
import { foldSource, foldStream } from "../src/tools/replay.ts";
import { natsSource } from "../src/tools/stream-reader.ts";
import { simulateWorkload, WORKLOAD_SETTINGS } from "../test/tools/support/workload.ts";
import { machineInfo, markdownTable, median, parseOwnArgs, positiveInt, printJson, round, runBench, UsageError } from "./support.ts";

const READS = [
  "raw",
  "replay",
  "audit",
  "replay-worker",
  "audit-worker",
  "audit-one-worker",
  "audit-split",
  "raw-callback",
  "replay-stream",
  "audit-stream",
] as const;
type Read = (typeof READS)[number];

const progress = (line: string) => process.stderr.write(`${line}\n`);

function parseSettings() {
  const values = parseOwnArgs(
    "usage: npx tsx bench/tools-read.ts [--events 1000000] [--base 100000] [--repeats 3] [--reads raw,replay,audit,replay-worker,audit-worker] [--data-dir DIR] [--rebuild] [--json] [--dist]",
    {
      events: { type: "string", default: "1000000" },
      base: { type: "string", default: "100000" },
      repeats: { type: "string", default: "3" },
      reads: { type: "string", default: "raw,replay,audit,replay-worker,audit-worker" },
      "data-dir": { type: "string", default: join(tmpdir(), "leasehold-bench-tools-read") },
      rebuild: { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      dist: { type: "boolean", default: false },
    },
  );
  const reads = values.reads.split(",").map((r) => r.trim()) as Read[];
  for (const r of reads) if (!READS.includes(r)) throw new UsageError(`--reads: ${r} is not one of ${READS.join(", ")}`);
  if (!reads.includes("raw")) throw new UsageError("--reads must include raw (every figure is a ratio to it)");
  return {
    events: positiveInt("events", values.events),
    base: positiveInt("base", values.base),
    repeats: positiveInt("repeats", values.repeats),
    reads,
    dataDir: values["data-dir"],
    rebuild: values.rebuild,
    json: values.json,
    dist: values.dist,
  };
}

const utf8 = new TextDecoder();
/** The names the workload gives actors and leases (hosts, spare hosts, proxies, routes, locks, proxy leases). */
const NAME = /^(?:h|spare|p|r)\d+$|^lock\/\d+$|^lease-\d+$/;
/** Fields that hold stream sequences, which a copy placed later in the stream would have to shift. */
const SEQUENCE_FIELDS = new Set(["waiterSeq", "admission", "routeSeq", "closed"]);

/** Copy `n` of an event: every actor and lease name suffixed with `-c<n>` (copy 0 is the event itself). */
function copyOf(event: EventEnvelope, n: number): EventEnvelope {
  if (n === 0) return event;
  const rename = (value: unknown, key: string): unknown => {
    if (SEQUENCE_FIELDS.has(key)) throw new Error(`the workload wrote ${key}, a stream sequence a copy cannot keep`);
    if (typeof value === "string") return NAME.test(value) ? `${value}-c${n}` : value;
    if (Array.isArray(value)) return value.map((v) => rename(v, key));
    if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rename(v, k)]));
    return value;
  };
  return rename(event, "") as EventEnvelope;
}

async function main(): Promise<void> {
  const settings = parseSettings();
  const server = await startLocalNatsServer({ dir: settings.dataDir });
  const nc = await connect({ servers: server.urls[0]!, name: "bench-tools-read", noAsyncTraces: true });
  try {
    const subjects = new Subjects("bench");
    const jsm = await jetstreamManager(nc, { timeout: 30_000 });
    const js = jetstream(nc, { timeout: 30_000 });
    let info = await jsm.streams.info(subjects.eventStream).catch(() => undefined);
    let writeMs: number | undefined;
    if (settings.rebuild || info === undefined || info.state.messages !== settings.events) {
      if (info !== undefined) await jsm.streams.delete(subjects.eventStream);
      const t0 = performance.now();
      const base = Math.min(settings.base, settings.events);
      progress(`simulating ${base} events`);
      const sim = await simulateWorkload({ events: base, seed: 7 });
      const history = sim.log.messages.slice(0, base).map((m) => JSON.parse(utf8.decode(m.payload)) as EventEnvelope);
      await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
      progress(`writing ${settings.events} events (simulated in ${round((performance.now() - t0) / 1000, 1)} s)`);
      let pending: Promise<unknown>[] = [];
      for (let i = 0; i < settings.events; i++) {
        const event = copyOf(history[i % base]!, Math.floor(i / base));
        pending.push(js.publish(subjects.event(event.kind, event.id), encodeEvent(event)));
        if (pending.length >= 1000) {
          await Promise.all(pending);
          pending = [];
        }
      }
      await Promise.all(pending);
      writeMs = round(performance.now() - t0);
      progress(`simulated and wrote them in ${round(writeMs / 1000, 1)} s`);
      info = await jsm.streams.info(subjects.eventStream);
    } else {
      progress(`reusing the stream in ${settings.dataDir} (${info.state.messages} events)`);
    }
    const total = info.state.last_seq;
    // --dist: the worker reads run the built dist/ (`npm run build` first), whose worker starts without tsx.
    const built = async <T>(file: string): Promise<T> => (await import(join(import.meta.dirname, "../dist/tools", file))) as T;
    const worker = settings.dist
      ? {
          ...(await built<typeof workerRead>("worker-read.js")),
          natsSource: (await built<{ natsSource: typeof natsSource }>("stream-reader.js")).natsSource,
        }
      : { ...workerRead, natsSource };
    const machine = machineInfo(nc.info?.version ?? "unknown");
    const log = await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });

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
    let auditViolations: number | undefined;
    const audit = { cooldownMs: WORKLOAD_SETTINGS.cooldownMs!, maxTtlMs: WORKLOAD_SETTINGS.maxTtlMs! };
    const expectRead = (n: number) => {
      if (n !== total) throw new Error(`read ${n} of ${total}`);
    };
    const runs: Record<Read, () => Promise<void>> = {
      raw,
      "raw-callback": async () => {
        let n = 0;
        await natsSource(nc, subjects).read({}, () => void n++);
        expectRead(n);
      },
      replay: async () => expectRead((await foldSource(natsSource(nc, subjects), subjects)).fold.messages),
      audit: async () => {
        const summary = await auditSource(natsSource(nc, subjects), subjects, audit);
        expectRead(summary.read);
        auditViolations = summary.violations;
      },
      "replay-worker": async () => expectRead((await worker.replayInWorker(worker.natsSource(nc, subjects), subjects)).messages),
      "audit-worker": async () => expectRead((await worker.auditInWorker(worker.natsSource(nc, subjects), subjects, audit)).read),
      "audit-one-worker": async () =>
        expectRead((await worker.auditInWorker(worker.natsSource(nc, subjects), subjects, audit, undefined, { split: false })).read),
      "audit-split": async () =>
        expectRead((await worker.auditInWorker(worker.natsSource(nc, subjects), subjects, audit, undefined, { split: true })).read),
      "replay-stream": async () => expectRead((await foldStream(log.readStream(), subjects)).messages),
      "audit-stream": async () => expectRead((await auditStream(log.readStream(), subjects, audit)).read),
    };
    const measurements: { repeat: number; read: Read; ms: number; eventsPerSec: number; load1m: number }[] = [];
    for (let repeat = 1; repeat <= settings.repeats; repeat++) {
      for (const read of settings.reads) {
        const load1m = round(loadavg()[0] ?? 0, 2);
        const t0 = performance.now();
        await runs[read]();
        const ms = round(performance.now() - t0);
        measurements.push({ repeat, read, ms, eventsPerSec: round(total / (ms / 1000)), load1m });
        progress(`repeat ${repeat} ${read}: ${round(ms / 1000, 2)} s, ${round(total / (ms / 1000))} events/s (load ${load1m})`);
      }
    }
    const rawMs = median(measurements.filter((m) => m.read === "raw").map((m) => m.ms));
    const summary = settings.reads.map((read) => {
      const ms = median(measurements.filter((m) => m.read === read).map((m) => m.ms));
      // Per repeat too: the raw read of the same repeat, run just before, is the fairest ceiling.
      const perRepeat = measurements
        .filter((m) => m.read === read)
        .map((m) => round(measurements.find((r) => r.read === "raw" && r.repeat === m.repeat)!.ms / m.ms, 2));
      return {
        read,
        medianMs: round(ms),
        eventsPerSec: round(total / (ms / 1000)),
        ratioToRaw: round(rawMs / ms, 2),
        ratioPerRepeat: perRepeat,
      };
    });
    const load = measurements.map((m) => m.load1m);
    const result = {
      settings,
      machine,
      events: total,
      writeMs,
      auditViolations,
      loadRange: [Math.min(...load), Math.max(...load)],
      summary,
      measurements,
    };
    if (settings.json) return printJson(result);
    process.stdout.write(
      [
        `${total} events, median of ${settings.repeats} interleaved repeats; node ${machine.node}, nats-server ${machine.natsServer}, load ${result.loadRange.join("–")}, audit found ${auditViolations ?? "–"} violations`,
        "",
        markdownTable(
          ["read", "median s", "events/s", "of raw", "of raw, each repeat"],
          summary.map((s) => [s.read, round(s.medianMs / 1000, 2), s.eventsPerSec, s.ratioToRaw, s.ratioPerRepeat.join(", ")]),
        ),
        "",
      ].join("\n"),
    );
  } finally {
    await nc.drain().catch(() => undefined);
    await server.stop();
  }
}

runBench(main);
