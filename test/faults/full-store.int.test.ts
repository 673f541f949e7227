/**
 * A full event store: a real nats-server whose JetStream `max_file_store` is
 * small, one `leasehold serve` under a mixed load, and a filler stream that
 * takes the rest of the store. While the store is full every attempt must be
 * answered in time (UNAVAILABLE for what must append), nothing may be
 * acknowledged that the stream lacks, and `/readyz` must say 503; once the
 * filler is purged the instance must serve again within 5 s, without a
 * restart, and `/readyz` must say 200.
 */
import { randomUUID } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, JetStreamApiError, StorageType } from "@nats-io/jetstream";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, startLocalNatsServer, type LocalNatsCluster } from "../../src/cluster/local-cluster.ts";
import { INSUFFICIENT_RESOURCES } from "../../src/events/jetstream-event-log.ts";
import { checkRun, checkTimeouts, VerdictBuilder } from "../chaos/checks.ts";
import type { OpRecord } from "../chaos/history.ts";
import { ServeProcess } from "../chaos/serve-process.ts";
import { readWholeStream } from "../chaos/stream.ts";
import { Workload } from "../chaos/workload.ts";
import { eventStreamOf } from "./drill.ts";

const ATTEMPT_MS = 2000;
const RECOVERY_MS = 5000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `/readyz` until it answers `status` (bounded); resolves with when it did. */
async function readyzBecomes(url: string, status: number, withinMs: number): Promise<number> {
  const deadline = Date.now() + withinMs;
  let last = 0;
  while (Date.now() < deadline) {
    last = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
      (r) => r.status,
      () => 0,
    );
    if (last === status) return Date.now();
    await sleep(100);
  }
  throw new Error(`/readyz answered ${last}, not ${status}, for ${withinMs} ms`);
}

/** Fills the store with 100 KB messages on a stream of its own until JetStream refuses one for lack of space. */
async function fillStore(servers: readonly string[]): Promise<{ purge(): Promise<void>; close(): Promise<void> }> {
  const nc = await connect({ servers: [...servers], name: "filler" });
  const jsm = await jetstreamManager(nc, { timeout: 5000 });
  await jsm.streams.add({ name: "FILLER", subjects: ["filler.>"], storage: StorageType.File });
  const js = jetstream(nc, { timeout: 5000 });
  const block = new Uint8Array(100_000);
  for (let i = 0; i < 1000; i++) {
    try {
      await js.publish("filler.block", block);
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === INSUFFICIENT_RESOURCES) break;
      throw e;
    }
  }
  return { purge: () => jsm.streams.purge("FILLER").then(() => undefined), close: () => nc.close() };
}

describe("a full event store (JetStream at its max_file_store)", () => {
  let cluster: LocalNatsCluster | undefined;
  let serve: ServeProcess | undefined;
  let workload: Workload | undefined;
  afterEach(async () => {
    await workload?.stop().catch(() => undefined);
    await serve?.kill();
    await cluster?.stop();
  });

  it("answers UNAVAILABLE in time, acknowledges nothing the stream lacks, serves again within 5 s of space freed, and /readyz says so", async () => {
    cluster = await startLocalNatsServer({ maxFileStore: "4MB" });
    const prefix = `full${randomUUID().replaceAll("-", "").slice(0, 10)}`;
    const httpPort = await freePort();
    const http = `http://127.0.0.1:${httpPort}`;
    serve = await ServeProcess.startOn(cluster, {
      name: "A",
      prefix,
      args: ["--cooldown-ms", "3000", "--max-ttl-ms", "30000", "--http", `127.0.0.1:${httpPort}`],
    });
    await readyzBecomes(http, 200, 10_000);
    workload = new Workload({ prefix, servers: cluster.urls, clients: 6, seed: 27, attemptMs: ATTEMPT_MS, opDeadlineMs: 4000 });
    await workload.setup();
    workload.start();
    await sleep(1500);

    const filler = await fillStore(cluster.urls);
    const fullAt = Date.now();
    // The clients' next appends are refused; /readyz follows within a few attempts.
    await readyzBecomes(http, 503, RECOVERY_MS);
    await sleep(3000);
    const probe = await workload.client("probe", 3000);
    const refused = await probe.call("lock.acquire", { name: "full-probe", owner: "probe", ttlMs: 5000 });

    await filler.purge();
    const freedAt = Date.now();
    await filler.close();
    const readyAt = await readyzBecomes(http, 200, RECOVERY_MS);
    let servedAt: number | undefined;
    while (servedAt === undefined && Date.now() < freedAt + RECOVERY_MS) {
      const r = await probe.call("lock.acquire", { name: `after-${Date.now()}`, owner: "probe", ttlMs: 5000 });
      if (r.result.status === "ok") servedAt = r.returnAt!;
    }
    await sleep(1500);
    await workload.stop();

    const records = workload.records;
    const verdict = new VerdictBuilder();
    const messages = await readWholeStream(cluster.urls, eventStreamOf(prefix));
    checkRun(records, messages, { prefix, cooldownMs: 3000, maxTtlMs: 30_000 }, verdict);
    // No outage is excused: every attempt, full store or not, is answered within its deadline.
    checkTimeouts(records, [], fullAt, verdict);
    const { violations, examples } = verdict.build();
    const during = records.filter((r) => r.invokeAt >= fullAt + 500 && r.invokeAt < freedAt);
    const summary =
      `${records.length} operations, ${during.length} while full (${outcomes(during)}); readyz 200 ${readyAt - freedAt} ms and ` +
      `a lock.acquire ok ${servedAt === undefined ? "never" : `${servedAt - freedAt} ms`} after the space was freed; ${JSON.stringify(examples)}`;
    console.log(`full store: ${summary}`);

    expect(violations, summary).toMatchObject({
      "acknowledged-command-lost": 0,
      "duplicate-event-for-requestId": 0,
      "event-without-cause": 0,
      "two-live-lock-holders": 0,
      "lock-history-not-linearizable": 0,
      "stream-audit": 0,
      "request-unanswered": 0,
      "attempt-timed-out-outside-faults": 0,
    });
    // While full, what must append is refused as UNAVAILABLE (never an ok the stream lacks, never silence).
    expect(refused.attempts.map((a) => a.outcome)).toContain("unavailable");
    expect(refused.result.status).toBe("unknown");
    expect(during.some((r) => r.attempts.some((a) => a.outcome === "unavailable"))).toBe(true);
    expect(servedAt, summary).toBeDefined();
    expect(servedAt! - freedAt).toBeLessThanOrEqual(RECOVERY_MS);
  }, 90_000);
});

/** Attempt outcomes of some operations, counted: `ok 12, unavailable 40`. */
function outcomes(records: readonly OpRecord[]): string {
  const counts = new Map<string, number>();
  for (const a of records.flatMap((r) => r.attempts)) counts.set(a.outcome, (counts.get(a.outcome) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${k} ${n}`).join(", ");
}
