/**
 * Messages and bytes on the service's own connection per request, one
 * request at a time: a lock pair, a proxy pair, a new placement and a lock
 * pair with a session open. What a path sends and receives beyond the lock
 * path (freshness looks, echoes) shows here exactly, whatever else runs on
 * the machine.
 *
 *   npx tsx bench/request-messages.ts [--pairs 500]
 */
import pino from "pino";
import { parseArgs } from "node:util";
import { resolveConfig } from "../src/config.ts";
import { startService } from "../src/service/start-service.ts";
import { json, positiveInt, runBench, withBench } from "./support.ts";

runBench(async () => {
  const { values } = parseArgs({ options: { pairs: { type: "string", default: "500" } } });
  const pairs = positiveInt("pairs", values.pairs);
  await withBench({ noAsyncTraces: true, waitForQuiet: false }, async (bench) => {
    const p = bench.prefix;
    const nc = await bench.connect("leasehold-service");
    await startService({ nc, config: resolveConfig({ prefix: p, nats: bench.nats.url }), logger: pino({ level: "silent" }) });
    const load = await bench.connect("bench-load");
    for (let i = 0; i < 100; i++) await load.request(`${p}.v1.proxy.register`, json({ proxy: `p${i}`, maxLeases: 100 }));
    const hosts = Array.from({ length: 8 }, (_, i) => `h${i}`);
    for (const host of hosts) await load.request(`${p}.v1.host.set`, json({ host, healthy: true }));
    const measure = async (label: string, pair: (i: number) => Promise<void>) => {
      for (let i = 0; i < 100; i++) await pair(i);
      const s0 = nc.stats();
      for (let i = 0; i < pairs; i++) await pair(i + 100);
      const s1 = nc.stats();
      const per = (a: number, b: number) => Math.round(((b - a) / pairs) * 100) / 100;
      process.stdout.write(
        `${label}: out ${per(s0.outMsgs, s1.outMsgs)} msgs ${per(s0.outBytes, s1.outBytes)} B, in ${per(s0.inMsgs, s1.inMsgs)} msgs ${per(s0.inBytes, s1.inBytes)} B\n`,
      );
    };
    const lockPair = async (name: string) => {
      const reply = (await load.request(`${p}.v1.lock.acquire`, json({ name, owner: "o", ttlMs: 10_000 }))).json<{
        lease: { etag: string };
      }>();
      await load.request(`${p}.v1.lock.release`, json({ name, etag: reply.lease.etag }));
    };
    await measure("lock acquire+release", (i) => lockPair(`a${i}`));
    await measure("proxy acquire+release", async () => {
      const reply = (await load.request(`${p}.v1.proxy.acquire`, json({ ttlMs: 10_000 }))).json<{ lease: { id: string } }>();
      await load.request(`${p}.v1.proxy.release`, json({ leaseId: reply.lease.id }));
    });
    await measure("new placement, 8 hosts (per request)", (i) =>
      load.request(`${p}.v1.route.acquire`, json({ route: "r", fp: `f${i}`, model: "m", candidates: hosts })).then(() => undefined),
    );
    await load.request(`${p}.v1.session.open`, json({ owner: "bench", ttlMs: 30_000 }));
    await measure("lock acquire+release, a session open", (i) => lockPair(`b${i}`));
  });
});
