/**
 * Live heap per held lock: `--locks` locks, each acquired once by an event
 * written the way the service writes it, folded into the lock projection's
 * record store (src/projections/fold-store.ts) in this process. The heap is
 * read after a full collection before and after, so the figure is what a
 * held lock keeps alive (its map entry, record, state, lease and strings),
 * not the garbage and headroom the RSS also holds (bench/held-memory.ts
 * measures that, on a whole service).
 *
 * Two rows: the records alone, and with the acquires' replies remembered
 * (every acquire carries a requestId within the reply horizon, as a client
 * retrying safely sends; the memory is bounded at 100,000 replies).
 *
 *   npx tsx bench/lock-state-memory.ts [--locks 100000] [--rounds 3] [--json]
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { encodeEvent, type EventEnvelope } from "../src/events/envelope.ts";
import { lockLogic } from "../src/lock/logic.ts";
import { DEFAULTS } from "../src/config.ts";
import { FoldStore } from "../src/projections/fold-store.ts";
import { Subjects } from "../src/contract/subjects.ts";
import { markdownTable, median, parseOwnArgs, positiveInt, printJson, round, runBench } from "./support.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** Heap in use after full collections, bytes. */
function liveHeap(): number {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

/** Bytes of live heap per lock after folding `locks` acquires (with their replies remembered when `replies`). */
function bytesPerLock(locks: number, replies: boolean): number {
  const subjects = new Subjects("lh");
  const now = Date.parse("2026-12-04T12:00:00.000Z");
  /** The acquire of lock `i`, as the service writes it (made as it is folded, so no message outlives its fold). */
  const message = (i: number) => {
    const name = `job-${i}`;
    const event: EventEnvelope = {
      type: "LockAcquired",
      v: 1,
      at: new Date(now - locks + i).toISOString(),
      kind: "lock",
      id: name,
      requestId: `req-${i}`,
      data: {
        owner: `worker-${i % 64}`,
        generation: 1,
        ttlMs: 600_000,
        expiresAt: new Date(now + 600_000 + i).toISOString(),
        previousOwner: "",
      },
    };
    const subject = subjects.event("lock", name);
    return { subject, seq: i + 1, time: now, payload: encodeEvent(event), msgId: replies ? `${subject}|op|req-${i}` : undefined };
  };
  const fold = lockLogic(DEFAULTS);
  const before = liveHeap();
  const store = new FoldStore({ fold, replies: { horizonMs: replies ? 3_600_000 : 0, keepLatest: 0 }, now: () => now });
  for (let i = 0; i < locks; i++) store.foldStored(message(i));
  const after = liveHeap();
  if (store.records.size !== locks) throw new Error(`folded ${store.records.size} records, expected ${locks}`);
  return (after - before) / locks;
}

function main(): Promise<void> {
  const values = parseOwnArgs("usage: npx tsx bench/lock-state-memory.ts [--locks 100000] [--rounds 3] [--json]", {
    locks: { type: "string", default: "100000" },
    rounds: { type: "string", default: "3" },
    json: { type: "boolean", default: false },
  });
  const locks = positiveInt("locks", values.locks);
  const rounds = positiveInt("rounds", values.rounds);
  const records: number[] = [];
  const withReplies: number[] = [];
  for (let r = 0; r < rounds; r++) {
    records.push(bytesPerLock(locks, false));
    withReplies.push(bytesPerLock(locks, true));
  }
  if (values.json) printJson({ locks, rounds, bytesPerLock: { records, withReplies } });
  else {
    const row = (what: string, xs: number[]) => [
      what,
      round(median(xs)),
      `${round(Math.min(...xs))}–${round(Math.max(...xs))}`,
      round((median(xs) * locks) / 1e6, 1),
    ];
    process.stdout.write(
      `${markdownTable(
        ["live heap per held lock", "median B", "min–max B", `MB for ${locks.toLocaleString("en")}`],
        [row("records", records), row("records and remembered replies", withReplies)],
      )}\n`,
    );
  }
  return Promise.resolve();
}

runBench(main);
