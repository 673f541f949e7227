/**
 * Sessions (1.2): what keeping 1,000 locks costs under one session against
 * 1,000 lock keepers, and how soon a crashed worker's locks come free.
 *
 *   npx tsx bench/sessions.ts [--locks 1000] [--ttl-ms 3000] [--window-ms 9000]
 *                             [--kills 1] [--wait-for-quiet] [--json]
 *
 * 1. Keeping: 1,000 locks held under one session by the typed client's
 *    session keeper, then the same 1,000 held by 1,000 lock keepers, each
 *    for `--window-ms` on the same service and TTL; counted on the wire
 *    (a subscriber on `<prefix>.v1.>` and on `<prefix>.events.>`): requests
 *    and events per second, and their ratio.
 * 2. Crash: a worker process (bench/session-worker.ts) takes the 1,000 locks
 *    under a session; a waiter queues on one of them; the worker is
 *    SIGKILLed. Figures per kill: kill to the session's end (the `expiresAt`
 *    of its last keepalive, which is when every one of its locks is free by
 *    the contract; at most one TTL); kill to `session.get` answering null
 *    (polled every 10 ms); all 1,000 locks free (or the waiter's) when
 *    checked after; the waiter's grant after the session's end, as the
 *    client saw it and as recorded (its `LockAcquired` event's `at`), against
 *    the contract's 50 ms.
 */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import type { NatsConnection } from "@nats-io/nats-core";
import { resolveConfig } from "../src/config.ts";
import { LeaseholdClient, type LockKeeper } from "../src/index.ts";
import { isUnparsable } from "../src/events/envelope.ts";
import { decodeEvent } from "../src/events/decode.ts";
import { sessionTables, type SessionCost, type SessionKill } from "./session-report.ts";
import { parseOwnArgs, positiveInt, printJson, round, runBench, withBench, type BenchContext } from "./support.ts";

const USAGE = `usage: npx tsx bench/sessions.ts [--locks 1000] [--ttl-ms 3000] [--window-ms 9000] [--kills 1] [--wait-for-quiet] [--json]`;
const WORKER = fileURLToPath(new URL("./session-worker.ts", import.meta.url));
const BOUND_MS = 50;

function parse() {
  const values = parseOwnArgs(USAGE, {
    locks: { type: "string", default: "1000" },
    "ttl-ms": { type: "string", default: "3000" },
    "window-ms": { type: "string", default: "9000" },
    kills: { type: "string", default: "1" },
    "wait-for-quiet": { type: "boolean", default: false },
    json: { type: "boolean", default: false },
  });
  return {
    locks: positiveInt("locks", values.locks),
    ttlMs: positiveInt("ttl-ms", values["ttl-ms"]),
    windowMs: positiveInt("window-ms", values["window-ms"]),
    kills: positiveInt("kills", values.kills),
    waitForQuiet: values["wait-for-quiet"],
    json: values.json,
  };
}

type Settings = ReturnType<typeof parse>;

/** Requests to the service and events appended, per second, over `windowMs` from now. */
async function wireRate(nc: NatsConnection, prefix: string, windowMs: number): Promise<{ requestsPerSec: number; eventsPerSec: number }> {
  let requests = 0;
  let events = 0;
  const subs = [
    nc.subscribe(`${prefix}.v1.>`, { callback: () => void requests++ }),
    nc.subscribe(`${prefix}.events.>`, { callback: () => void events++ }),
  ];
  await nc.flush();
  const t0 = performance.now();
  await sleep(windowMs);
  const seconds = (performance.now() - t0) / 1000;
  for (const sub of subs) sub.unsubscribe();
  return { requestsPerSec: round(requests / seconds, 1), eventsPerSec: round(events / seconds, 1) };
}

/** Runs `fn` for each of `count` indexes, 64 at a time. */
async function eachOf(count: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

/** The keepalive cost of one session against that of one keeper per lock. */
async function keeping(bench: BenchContext, settings: Settings): Promise<SessionCost> {
  const client = new LeaseholdClient(await bench.connect("keeper"), { prefix: bench.prefix });
  const observer = await bench.connect("observer");
  const { locks, ttlMs, windowMs } = settings;

  const session = await client.session.keep({ owner: "one-session", ttlMs });
  await eachOf(locks, async (i) => void (await session.acquire(`kept-${i}`)));
  bench.progress(`${locks} locks under one session; counting for ${windowMs} ms`);
  const oneSession = await wireRate(observer, bench.prefix, windowMs);
  await session.close();

  const keepers: LockKeeper[] = [];
  await eachOf(locks, async (i) => void keepers.push(await client.lock.keep({ name: `kept-${i}`, owner: "keepers", ttlMs })));
  bench.progress(`${locks} lock keepers; counting for ${windowMs} ms`);
  const separate = await wireRate(observer, bench.prefix, windowMs);
  await Promise.all(keepers.map((k) => k.close()));

  return {
    oneSession,
    separateKeepers: separate,
    requestRatio: round(separate.requestsPerSec / oneSession.requestsPerSec, 1),
    eventRatio: round(separate.eventsPerSec / oneSession.eventsPerSec, 1),
  };
}

/** Spawns the worker and resolves with its session once it holds every lock. */
function startWorker(url: string, prefix: string, settings: Settings) {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", WORKER, "--nats", url, "--prefix", prefix, "--locks", String(settings.locks), "--ttl-ms", String(settings.ttlMs)],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const ready = new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`the worker did not hold its locks within 120 s:\n${stderr}`)), 120_000);
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
      if (!out.includes("\n")) return;
      clearTimeout(timer);
      resolve((JSON.parse(out.slice(0, out.indexOf("\n"))) as { session: string }).session);
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the worker exited (${code}) before holding its locks:\n${stderr}`));
    });
  });
  return { child, ready };
}

/** One crash: kill the worker, time the session's end, every lock's freedom and the waiter's grant. */
async function crash(bench: BenchContext, settings: Settings, round_: number): Promise<SessionKill> {
  const prefix = bench.prefix;
  const client = new LeaseholdClient(await bench.connect(`observer-${round_}`), { prefix });
  const nc = await bench.connect(`events-${round_}`);
  const worker = startWorker(bench.nats.url, prefix, settings);
  const session = await worker.ready;
  // The session's expiry as its keepalives record it, and the waiter's grant as recorded.
  let sessionExpiresAtMs = Number.NaN;
  let grantAtMs = Number.NaN;
  const name = `lock-${Math.floor(settings.locks / 2)}`;
  const sub = nc.subscribe(`${prefix}.events.>`, {
    callback: (_e, m) => {
      const entry = decodeEvent(m.data, 0);
      if (isUnparsable(entry)) return;
      const { kind, id, type, data, at } = entry.event as {
        kind: string;
        id: string;
        type: string;
        data: { expiresAt?: string };
        at: string;
      };
      if (kind === "session" && id === session && data.expiresAt !== undefined) sessionExpiresAtMs = Date.parse(data.expiresAt);
      if (kind === "lock" && id === name && type === "LockAcquired") grantAtMs = Date.parse(at);
    },
  });
  await nc.flush();
  const initial = await client.session.get({ id: session });
  if (initial.session === null) throw new Error("the worker's session ended before the kill");
  sessionExpiresAtMs = Date.parse(initial.session.expiresAt);

  const waiting = client.lock.acquire({ name, owner: "waiter", waitMs: 10 * settings.ttlMs });
  for (let i = 0; ; i++) {
    const { waiters } = await client.lock.get({ name });
    if ((waiters ?? 0) >= 1) break;
    if (i > 500) throw new Error("the waiter never showed in the queue");
    await sleep(10);
  }

  const killedAtMs = Date.now();
  worker.child.kill("SIGKILL");
  let seenNullAtMs = Number.NaN;
  for (;;) {
    const { session: s } = await client.session.get({ id: session });
    if (s === null) {
      seenNullAtMs = Date.now();
      break;
    }
    if (Date.now() - killedAtMs > 10 * settings.ttlMs) throw new Error("the session outlived ten TTLs after the kill");
    await sleep(10);
  }
  const { lease: granted } = await waiting;
  const grantSeenAtMs = Date.now();
  let notFree = 0;
  await eachOf(settings.locks, async (i) => {
    const { lease } = await client.lock.get({ name: `lock-${i}` });
    if (lease !== null && lease.owner !== "waiter") notFree++;
  });
  await client.lock.release({ name, etag: granted.etag });
  await sleep(50);
  sub.unsubscribe();
  return {
    killToSessionEndMs: sessionExpiresAtMs - killedAtMs,
    killToSessionGetNullMs: seenNullAtMs - killedAtMs,
    locksStillHeldAfter: notFree,
    waiterGrantAfterEndRecordedMs: grantAtMs - sessionExpiresAtMs,
    waiterGrantAfterEndSeenMs: grantSeenAtMs - sessionExpiresAtMs,
  };
}

async function main(): Promise<void> {
  const settings = parse();
  await withBench({ noAsyncTraces: true, waitForQuiet: settings.waitForQuiet }, async (bench) => {
    const ttl = String(settings.ttlMs);
    await bench.startService(resolveConfig({ prefix: bench.prefix, nats: bench.nats.url, lockTtlMs: ttl, maxTtlMs: ttl }));
    const cost = await keeping(bench, settings);
    const kills = [];
    for (let k = 1; k <= settings.kills; k++) {
      bench.progress(`kill ${k} of ${settings.kills}`);
      kills.push(await crash(bench, settings, k));
    }
    const within = kills.every((k) => k.killToSessionEndMs <= settings.ttlMs && k.locksStillHeldAfter === 0);
    const grantsWithin = kills.every((k) => k.waiterGrantAfterEndRecordedMs <= BOUND_MS);
    if (settings.json) {
      printJson({ machine: bench.machine, settings, cost, kills, boundMs: BOUND_MS, within, grantsWithin });
      return;
    }
    process.stdout.write(`${sessionTables(settings, cost, kills)}\n`);
  });
}

runBench(main);
