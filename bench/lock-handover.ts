/**
 * Lock handover latency: how soon a waiting `lock.acquire` (with `waitMs`)
 * is answered with the lease once the holder releases it. Each round, a
 * waiter joins the queue behind the holder (confirmed by `lock.get` counting
 * it), then the holder releases; the waiter's grant becomes the next holder.
 *
 *   npx tsx bench/lock-handover.ts [--handovers 1000] [--instances 2]
 *                                  [--wait-for-quiet] [--json]
 *
 * With two instances (the default) the queue group spreads the requests, so
 * in about half the rounds the release is decided on one instance and the
 * waiter is parked on the other: its grant then depends on that instance's
 * projection follower delivering the release. Figures, per handover:
 *
 * - grant after release: from sending the release to receiving the
 *   waiter's lease (includes the release's own round trip), as a client sees it;
 * - server gap: the `LockAcquired` event's `at` minus the `LockReleased`'s.
 *
 * The contract's bound is 50 ms (p99). See bench/README.md for the last run.
 */
import { resolveConfig } from "../src/config.ts";
import { LeaseholdClient } from "../src/index.ts";
import { startService, type RunningService } from "../src/service/start-service.ts";
import { pino } from "pino";
import { isUnparsable } from "../src/events/envelope.ts";
import { decodeEvent } from "../src/events/decode.ts";
import { markdownTable, parseOwnArgs, positiveInt, printJson, quantile, round, runBench, UsageError, withBench } from "./support.ts";

const USAGE = `usage: npx tsx bench/lock-handover.ts [--handovers 1000] [--instances 1|2] [--wait-for-quiet] [--json]`;
const NAME = "handover";
const BOUND_MS = 50;

function parse() {
  const values = parseOwnArgs(USAGE, {
    handovers: { type: "string", default: "1000" },
    instances: { type: "string", default: "2" },
    "wait-for-quiet": { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  });
  const instances = positiveInt("instances", values.instances);
  if (instances > 2) throw new UsageError("--instances must be 1 or 2");
  return { handovers: positiveInt("handovers", values.handovers), instances, waitForQuiet: values["wait-for-quiet"], json: values.json };
}

async function main(): Promise<void> {
  const settings = parse();
  await withBench({ noAsyncTraces: true, waitForQuiet: settings.waitForQuiet }, async (bench) => {
    const config = resolveConfig({ prefix: bench.prefix, nats: bench.nats.url, lockTtlMs: 10_000, maxTtlMs: 10_000 });
    const first = await bench.startService(config);
    const others: RunningService[] = [];
    try {
      for (let i = 1; i < settings.instances; i++) {
        others.push(await startService({ nc: await bench.connect(`leasehold-service-${i}`), config, logger: pino({ level: "silent" }) }));
      }
      const holderClient = new LeaseholdClient(await bench.connect("holder"), { prefix: bench.prefix });
      const waiterClient = new LeaseholdClient(await bench.connect("waiter"), { prefix: bench.prefix });
      const observer = new LeaseholdClient(await bench.connect("observer"), { prefix: bench.prefix });
      bench.progress(`${settings.instances} instance(s); ${settings.handovers} handovers`);

      let held = (await holderClient.lock.acquire({ name: NAME, owner: "h0" })).lease;
      const clientMs: number[] = [];
      const started = performance.now();
      for (let round = 1; round <= settings.handovers; round++) {
        // Alternate connections, so that each grant's holder releases from the connection it was granted on.
        const waiter = round % 2 === 1 ? waiterClient : holderClient;
        const releaser = round % 2 === 1 ? holderClient : waiterClient;
        const waiting = waiter.lock.acquire({ name: NAME, owner: `h${round}`, waitMs: 10_000 });
        while ((await observer.lock.get({ name: NAME })).waiters !== 1) {
          // The waiter's LockWaiterQueued is not folded yet: look again.
        }
        const releaseSent = performance.now();
        await releaser.lock.release({ name: NAME, etag: held.etag });
        held = (await waiting).lease;
        clientMs.push(performance.now() - releaseSent);
        if (round % 200 === 0) bench.progress(`${round} handovers`);
      }
      const seconds = (performance.now() - started) / 1000;

      // The service's own instants: LockReleased → the next LockAcquired, from the stream.
      const serverMs: number[] = [];
      let releasedAt: number | undefined;
      for (const message of await first.log.readSubject(first.subjects.event("lock", NAME), 1)) {
        const entry = decodeEvent(message.payload, message.seq, message.msgId);
        if (isUnparsable(entry)) continue;
        if (entry.event.type === "LockReleased") releasedAt = Date.parse(entry.event.at);
        else if (entry.event.type === "LockAcquired" && releasedAt !== undefined) {
          serverMs.push(Date.parse(entry.event.at) - releasedAt);
          releasedAt = undefined;
        }
      }

      const figures = {
        handovers: settings.handovers,
        instances: settings.instances,
        seconds: round(seconds, 1),
        grantAfterReleaseMs: {
          p50: round(quantile(clientMs, 0.5), 2),
          p99: round(quantile(clientMs, 0.99), 2),
          max: round(Math.max(...clientMs), 2),
        },
        serverGapMs: { p50: round(quantile(serverMs, 0.5), 2), p99: round(quantile(serverMs, 0.99), 2), max: Math.max(...serverMs) },
        boundMs: BOUND_MS,
        met: quantile(clientMs, 0.99) <= BOUND_MS,
        machine: bench.machine,
      };
      if (settings.json) printJson(figures);
      else {
        process.stdout.write(
          `${markdownTable(
            ["figure", "p50 ms", "p99 ms", "max ms"],
            [
              [
                "grant after release (client)",
                figures.grantAfterReleaseMs.p50,
                figures.grantAfterReleaseMs.p99,
                figures.grantAfterReleaseMs.max,
              ],
              ["server gap (event instants)", figures.serverGapMs.p50, figures.serverGapMs.p99, figures.serverGapMs.max],
            ],
          )}\n${settings.handovers} handovers on ${settings.instances} instance(s) in ${figures.seconds} s; p99 bound ${BOUND_MS} ms: ${figures.met ? "met" : "NOT met"}\n`,
        );
      }
    } finally {
      for (const s of others) await s.stop().catch(() => undefined);
    }
  });
}

runBench(main);
