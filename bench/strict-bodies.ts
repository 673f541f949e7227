/**
 * Micro-benchmark of the 1.2 unknown-field check on the request hot path:
 * the check alone (one set lookup per field of the parsed body) against the
 * whole validation of the same body (`parseRequest`: JSON.parse and zod), in
 * one run, for a lock acquire, a route acquire with 8 candidates and one
 * with 1,000 (the last takes the known-list-tail path, where the check is
 * zod's strict head). A developer's tool; not part of `npm run bench`.
 *
 *   npx tsx bench/strict-bodies.ts [--ms 1000]
 */
import type { z } from "zod";
import { lockRequests } from "../src/lock/endpoints.ts";
import { routeRequests } from "../src/route/requests.ts";
import { parseRequest } from "../src/transport/endpoint.ts";
import { firstUnknownField } from "../src/transport/endpoint.ts";

const args = process.argv.slice(2);
const msIndex = args.indexOf("--ms");
const durationMs = msIndex >= 0 ? Number(args[msIndex + 1]) : 1000;

const encoder = new TextEncoder();

/** Nanoseconds per call of `work`, over `durationMs` after a warm-up. */
function nsPerCall(work: (i: number) => unknown): number {
  for (let i = 0; i < 20_000; i++) work(i);
  let calls = 0;
  const start = performance.now();
  const end = start + durationMs;
  while (performance.now() < end) for (let j = 0; j < 1000; j++) work(calls++);
  return ((performance.now() - start) * 1e6) / calls;
}

const cases: { name: string; schema: z.ZodObject; body: (i: number) => Record<string, unknown> }[] = [
  {
    name: "lock.acquire",
    schema: lockRequests.acquire,
    body: (i) => ({ name: `lock-${i % 1000}`, owner: "worker-7", ttlMs: 30_000, requestId: `req-${i}` }),
  },
  {
    name: "route.acquire, 8 candidates",
    schema: routeRequests.acquire,
    body: (i) => ({ route: "chat", fp: `conv-${i % 1000}`, model: "m", candidates: Array.from({ length: 8 }, (_, h) => `h${h}`) }),
  },
  {
    name: "route.acquire, 1,000 candidates",
    schema: routeRequests.acquire,
    body: (i) => ({ route: "chat", fp: `conv-${i % 1000}`, model: "m", candidates: Array.from({ length: 1000 }, (_, h) => `h${h}`) }),
  },
];

console.log(`strict bodies: ${new Date().toISOString()}, ${durationMs} ms per figure`);
console.log("| request | whole validation, µs | unknown-field check, µs | check / whole |");
console.log("| --- | ---: | ---: | ---: |");
for (const c of cases) {
  const texts = Array.from({ length: 1000 }, (_, i) => encoder.encode(JSON.stringify(c.body(i))));
  const parsed = texts.map((t) => JSON.parse(new TextDecoder().decode(t)) as Record<string, unknown>);
  const fields = new Set(Object.keys(c.schema.shape));
  const whole = nsPerCall((i) => parseRequest(c.schema, texts[i % 1000]!));
  const check = nsPerCall((i) => firstUnknownField(parsed[i % 1000]!, fields));
  console.log(`| ${c.name} | ${(whole / 1000).toFixed(2)} | ${(check / 1000).toFixed(3)} | ${(check / whole).toFixed(3)} |`);
}
