/**
 * Micro-benchmark of the reply memory: the cost of `remember` at its bound
 * (every call evicts the oldest reply), against the same calls below the
 * bound and against a bare Map set + delete of the same keys, interleaved in
 * one run. Issue 25's target: at most 5 µs per `remember` at the bound.
 *
 *   npx tsx bench/reply-memory.ts [--cap 100000] [--calls 1000000] [--rounds 5] [--json]
 */
import { ReplyMemory } from "../src/projections/fold-store.ts";
import { markdownTable, median, parseOwnArgs, positiveInt, printJson, quantile, round, runBench } from "./support.ts";

/** A reply shaped like a lock acquire's. */
const reply = { ok: true, token: "lock-123:7", generation: 7, expiresAt: "2026-12-04T07:00:00.000Z" };

/** Nanoseconds per call of `run(i)` for `calls` calls. */
function perCall(calls: number, run: (i: number) => void): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) run(i);
  return Number(process.hrtime.bigint() - t0) / calls;
}

function main(): Promise<void> {
  const values = parseOwnArgs("usage: npx tsx bench/reply-memory.ts [--cap 100000] [--calls 1000000] [--rounds 5] [--json]", {
    cap: { type: "string", default: "100000" },
    calls: { type: "string", default: "1000000" },
    rounds: { type: "string", default: "5" },
    json: { type: "boolean", default: false },
  });
  const cap = positiveInt("cap", values.cap);
  const calls = positiveInt("calls", values.calls);
  const rounds = positiveInt("rounds", values.rounds);
  const keys = Array.from({ length: cap + calls }, (_, i) => `lock.acquire|lock-${i % 50_000}|req-${i}`);
  const samples: Record<"atCap" | "belowCap" | "bareMap", number[]> = { atCap: [], belowCap: [], bareMap: [] };
  for (let r = 0; r < rounds; r++) {
    const full = new ReplyMemory({ maxEntries: cap });
    for (let i = 0; i < cap; i++) full.remember(keys[i]!, reply, i);
    samples.atCap.push(perCall(calls, (i) => full.remember(keys[cap + i]!, reply, cap + i)));
    const roomy = new ReplyMemory({ maxEntries: cap + calls });
    samples.belowCap.push(perCall(calls, (i) => roomy.remember(keys[i]!, reply, i)));
    const map = new Map<string, unknown>();
    for (let i = 0; i < cap; i++) map.set(keys[i]!, reply);
    samples.bareMap.push(
      perCall(calls, (i) => {
        map.set(keys[cap + i]!, reply);
        map.delete(keys[i]!);
      }),
    );
  }
  const rows = Object.entries(samples).map(([name, ns]) => ({
    name,
    medianUs: round(median(ns) / 1000, 3),
    minUs: round(Math.min(...ns) / 1000, 3),
    maxUs: round(Math.max(...ns) / 1000, 3),
    p90Us: round(quantile(ns, 0.9) / 1000, 3),
  }));
  if (values.json) printJson({ cap, calls, rounds, rows });
  else
    process.stdout.write(
      `${markdownTable(
        ["remember", "median µs/call", "min", "max"],
        rows.map((r) => [r.name, r.medianUs, r.minUs, r.maxUs]),
      )}\n(cap ${cap}, ${calls} calls per round, ${rounds} interleaved rounds)\n`,
    );
  return Promise.resolve();
}

runBench(main);
