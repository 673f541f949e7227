/**
 * Where the CPU of `audit`'s worker read goes, thread by thread, against a
 * raw ordered-consumer read of the same stream: the stream `tools-read.ts`
 * keeps in its data directory (run that first), each read's CPU seconds per
 * thread of this process (from /proc, sampled while the workers live) and
 * the nats-server's. On a machine whose cores are all busy the wall time is
 * about the CPU a read needs over the share the scheduler gives it, so these
 * say what a ratio to the raw read can be there. Linux only; runs the built
 * dist/ (`npm run build` first).
 *
 *   npx tsx bench/tools-read-cpu.ts [--reads raw,audit-split,audit-one-worker] [--repeats 2] [--data-dir DIR]
 */
import { readdirSync, readFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import { startLocalNatsServer } from "../src/cluster/local-cluster.ts";
import { Subjects } from "../src/contract/subjects.ts";
import type * as workerRead from "../src/tools/worker-read.ts";
import type * as streamReader from "../src/tools/stream-reader.ts";
import { WORKLOAD_SETTINGS } from "../test/tools/support/workload.ts";
import { listOf, parseOwnArgs, positiveInt, round, runBench } from "./support.ts";

const READS = ["raw", "audit-split", "audit-one-worker"] as const;
/** The kernel's clock ticks per second (USER_HZ) in /proc's CPU times. */
const TICKS = 100;

/** CPU seconds so far of each thread of process `pid`, by thread id. */
function threadCpu(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(tid, (Number(fields[11]) + Number(fields[12])) / TICKS);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

async function main(): Promise<void> {
  const values = parseOwnArgs(
    "usage: npx tsx bench/tools-read-cpu.ts [--reads raw,audit-split,audit-one-worker] [--repeats 2] [--data-dir DIR]",
    {
      reads: { type: "string", default: READS.join(",") },
      repeats: { type: "string", default: "2" },
      "data-dir": { type: "string", default: join(tmpdir(), "leasehold-bench-tools-read") },
    },
  );
  const reads = listOf("reads", "read", values.reads, READS);
  const repeats = positiveInt("repeats", values.repeats);
  const built = async <T>(file: string): Promise<T> => (await import(join(import.meta.dirname, "../dist/tools", file))) as T;
  const { auditInWorker } = await built<typeof workerRead>("worker-read.js");
  const { natsSource } = await built<typeof streamReader>("stream-reader.js");
  const server = await startLocalNatsServer({ dir: values["data-dir"] });
  const nc = await connect({ servers: server.urls[0]!, name: "bench-tools-read-cpu", noAsyncTraces: true });
  try {
    const subjects = new Subjects("bench");
    const js = jetstream(nc);
    const audit = { cooldownMs: WORKLOAD_SETTINGS.cooldownMs!, maxTtlMs: WORKLOAD_SETTINGS.maxTtlMs! };
    const runs: Record<(typeof READS)[number], () => Promise<unknown>> = {
      raw: async () => {
        const consumer = await js.consumers.get(subjects.eventStream, {
          filter_subjects: subjects.allEvents,
          deliver_policy: DeliverPolicy.StartSequence,
          opt_start_seq: 1,
        });
        const messages = await consumer.consume({ max_messages: 1024 });
        for await (const m of messages) if (m.info.pending === 0) break;
        await messages.close();
      },
      "audit-split": () => auditInWorker(natsSource(nc, subjects), subjects, audit, undefined, { split: true }),
      "audit-one-worker": () => auditInWorker(natsSource(nc, subjects), subjects, audit, undefined, { split: false }),
    };
    const serverPid = server.nodes[0]!.pid!;
    const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    for (let repeat = 1; repeat <= repeats; repeat++) {
      for (const read of reads) {
        const before = threadCpu(process.pid);
        const serverBefore = sum(threadCpu(serverPid));
        // Workers are gone once the read resolves: their last sample stands for their whole time.
        const seen = new Map<string, number>();
        const sampler = setInterval(() => threadCpu(process.pid).forEach((cpu, tid) => seen.set(tid, cpu)), 50);
        const load = round(loadavg()[0] ?? 0, 1);
        const t0 = performance.now();
        await runs[read]();
        const wallS = (performance.now() - t0) / 1000;
        clearInterval(sampler);
        const after = new Map([...seen, ...threadCpu(process.pid)]);
        const threads = [...after]
          .map(([tid, cpu]) => ({ thread: tid === String(process.pid) ? "main" : tid, cpu: cpu - (before.get(tid) ?? 0) }))
          .filter((t) => t.cpu >= 0.05)
          .sort((a, b) => b.cpu - a.cpu);
        const serverCpu = sum(threadCpu(serverPid)) - serverBefore;
        const total = threads.reduce((s, t) => s + t.cpu, 0) + serverCpu;
        process.stdout.write(
          `repeat ${repeat} ${read}: wall ${round(wallS, 2)} s, load ${load}; CPU s: ${threads.map((t) => `${t.thread} ${round(t.cpu, 2)}`).join(", ")}; nats-server ${round(serverCpu, 2)}; all ${round(total, 2)}\n`,
        );
      }
    }
  } finally {
    await nc.drain().catch(() => undefined);
    await server.stop();
  }
}

runBench(main);
