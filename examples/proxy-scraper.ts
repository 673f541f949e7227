/**
 * A scraper that leases proxies and reports bans.
 *
 * It registers three proxies (labelled with this run's pool, so runs do not
 * see each other's cooldowns), then fetches pages from two sites, each
 * through `client.proxy.withLease`: lease a proxy for the page's site, fetch,
 * report how it went, release. The sites are simulated: shop.example bans one
 * proxy on sight, rate-limits a second and bans the third on its second page;
 * news.example serves everybody. A banned or rate-limited proxy cools down for
 * that site only, so once every proxy is out for shop.example the service
 * answers NO_MATCH with the counts of why, while news.example still gets one.
 *
 *   npx leasehold serve                   # in another terminal
 *   npx tsx examples/proxy-scraper.ts     # NATS_URL, LEASEHOLD_PREFIX optional
 */
import { randomUUID } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import { LeaseholdClient, NoMatchError, type ProxyResult } from "../src/index.ts";

const pool = randomUUID().slice(0, 6);
const proxies = [
  { proxy: `${pool}-fast`, latencyMs: 20 },
  { proxy: `${pool}-medium`, latencyMs: 45 },
  { proxy: `${pool}-slow`, latencyMs: 90 },
];

/** The simulated web: shop.example bans -fast on sight, rate-limits -medium, and bans any proxy on its second page. */
const seenByShop = new Map<string, number>();
async function fetchThrough(proxy: string, url: URL): Promise<{ status: number; result: ProxyResult }> {
  await new Promise((resolve) => setTimeout(resolve, 20)); // the network
  if (url.hostname !== "shop.example") return { status: 200, result: "ok" };
  const visits = (seenByShop.get(proxy) ?? 0) + 1;
  seenByShop.set(proxy, visits);
  if (proxy.endsWith("-fast") || visits > 1) return { status: 403, result: "banned" };
  if (proxy.endsWith("-medium")) return { status: 429, result: "rate_limited" };
  return { status: 200, result: "ok" };
}

const nc = await connect({ servers: process.env.NATS_URL ?? "nats://127.0.0.1:4222", name: "proxy-scraper" });
const client = new LeaseholdClient(nc, { prefix: process.env.LEASEHOLD_PREFIX ?? "leasehold" });
try {
  for (const p of proxies) await client.proxy.register({ ...p, maxLeases: 2, labels: { pool } });
  console.log(`registered ${proxies.map((p) => `${p.proxy} (${p.latencyMs} ms)`).join(", ")}`);

  const pages = [
    "news.example/1",
    "shop.example/a",
    "shop.example/b",
    "shop.example/c",
    "news.example/2",
    "shop.example/d",
    "shop.example/e",
    "news.example/3",
  ];
  for (const page of pages) {
    const url = new URL(`https://${page}`);
    try {
      await client.proxy.withLease({ ttlMs: 10_000, target: url.hostname, labels: { pool } }, async (lease) => {
        const answer = await fetchThrough(lease.proxy, url);
        console.log(`GET ${page} via ${lease.proxy} -> ${answer.status}${answer.result === "ok" ? "" : ` (report ${answer.result})`}`);
        return { result: answer.result, value: answer.status };
      });
    } catch (e) {
      if (!(e instanceof NoMatchError)) throw e;
      const s = e.stats;
      console.log(
        `GET ${page}: no proxy available (NO_MATCH: considered ${s.considered}, in cooldown ${s.inCooldown}, at capacity ${s.atCapacity}, unhealthy ${s.unhealthy})`,
      );
    }
  }

  const { proxies: listed } = await client.proxy.list();
  for (const p of listed.filter((x) => x.labels.pool === pool)) {
    const cooldowns = p.cooldowns.map((c) => `${c.target || "(all)"} until ${c.untilAt}`).join(", ") || "none";
    console.log(`${p.proxy}: active ${p.active}, cooldowns: ${cooldowns}`);
  }
  // Leave no demo proxies behind (their cooldowns would outlive them anyway).
  for (const p of proxies) await client.proxy.remove({ proxy: p.proxy });
} finally {
  await nc.close();
}
