/**
 * The CPU a start's backlog worker spends per event, without NATS or the
 * thread: lock events as bench/restart.ts writes them (acquire and release,
 * round after round, each with a `requestId` and its message id), packed
 * into batches and unpacked as the worker does, then folded with the
 * worker's own fold (src/projections/backlog-fold.ts) and answered as its
 * part. The figure is the process's CPU µs per event (`process.cpuUsage`:
 * this thread and the collector's helpers), which the machine's load moves
 * far less than wall time; compare trees in alternation.
 *
 *   npx tsx bench/backlog-fold.ts [--events 1000000] [--locks 100000] [--repeats 3] [--old] [--json]
 *
 * `--old`: the events are an hour old when folded, past the reply horizon
 * (a start on an old stream keeps no replies but the latest few); without it
 * they were written just now and every reply is owed, as after a crash.
 */
import { BacklogFold } from "../src/projections/backlog-fold.ts";
import { BatchPacker, BatchUnpacker, type FoldBatch } from "../src/threads/message-batches.ts";
import { encodeEvent } from "../src/events/envelope.ts";
import { lockHistoryEvent } from "./lock-history.ts";
import { Subjects } from "../src/contract/subjects.ts";
import type { StoredMessage } from "../src/events/event-log.ts";
import { KIND_FOLDS } from "../src/tools/stream-fold.ts";
import type { KindFold } from "../src/projections/kind-fold.ts";
import { DEFAULTS } from "../src/config.ts";
import { median, parseOwnArgs, positiveInt, printJson, round, runBench } from "./support.ts";

const usage = "usage: npx tsx bench/backlog-fold.ts [--events 1000000] [--locks 100000] [--repeats 3] [--old] [--json]";

/** The batches of `events` lock events over `locks` locks, written at `atMs`. */
function batchesOf(events: number, locks: number, atMs: number): FoldBatch[] {
  const subjects = new Subjects("rbench2");
  const packer = new BatchPacker(1_000_000);
  const batches: FoldBatch[] = [];
  const rounds = events / (2 * locks);
  let written = 0;
  for (let g = 1; g <= rounds; g++) {
    for (const type of ["LockAcquired", "LockReleased"] as const) {
      const at = new Date(atMs);
      for (let i = 0; i < locks; i++) {
        const { subject, event, msgId } = lockHistoryEvent(subjects, type, i, g, written, at);
        written++;
        const m: StoredMessage = { seq: written, subject, payload: encodeEvent(event), time: atMs, msgId, pending: events - written };
        if (packer.add(m, true)) batches.push(packer.take().batch);
      }
    }
  }
  if (packer.count > 0) batches.push(packer.take().batch);
  return batches;
}

/** CPU µs per event of one fold of `batches` (cloned: unpacking reads them only), and wall ms. */
function foldOnce(
  batches: readonly FoldBatch[],
  events: number,
  nowMs: number,
): { cpuUsPerEvent: number; wallMs: number; records: number } {
  const fold = KIND_FOLDS.lock as unknown as KindFold<unknown>;
  const replies = { horizonMs: 2 * DEFAULTS.dedupWindowMs };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const backlog = new BacklogFold(fold, replies, nowMs);
  const unpacker = new BatchUnpacker();
  for (const batch of batches) unpacker.unpack(batch, (m, subject) => backlog.step(m, subject, unpacker.resets));
  const part = backlog.part();
  const cpu = process.cpuUsage(cpu0);
  return { cpuUsPerEvent: (cpu.user + cpu.system) / events, wallMs: performance.now() - t0, records: part.records.length };
}

function main(): Promise<void> {
  const values = parseOwnArgs(usage, {
    events: { type: "string", default: "1000000" },
    locks: { type: "string", default: "100000" },
    repeats: { type: "string", default: "3" },
    old: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  });
  const events = positiveInt("--events", values.events);
  const locks = positiveInt("--locks", values.locks);
  const repeats = positiveInt("--repeats", values.repeats);
  const nowMs = Date.now();
  const batches = batchesOf(events, locks, values.old ? nowMs - 3_600_000 : nowMs);
  const runs = [];
  for (let r = 0; r < repeats; r++) {
    // Between runs: the previous fold's garbage is not this one's.
    (globalThis as { gc?: () => void }).gc?.();
    runs.push(foldOnce(batches, events, nowMs));
  }
  const cpu = runs.map((r) => r.cpuUsPerEvent);
  const summary = {
    events,
    locks,
    old: values.old,
    cpuUsPerEvent: round(median(cpu), 2),
    spread: [round(Math.min(...cpu), 2), round(Math.max(...cpu), 2)],
    wallMs: runs.map((r) => round(r.wallMs)),
    records: runs[0]?.records,
  };
  if (values.json) printJson(summary);
  else console.log(JSON.stringify(summary));
  return Promise.resolve();
}

runBench(main);
