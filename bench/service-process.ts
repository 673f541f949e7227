/**
 * A leasehold service alone in a child process (bench/restart-service.ts),
 * for benches that measure a service's start, or its memory, or need
 * services that do not share one heap: spawning it, waiting for its first
 * answer, its RSS, and stopping it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/nats-core";
import { json, round, succeeded } from "./support.ts";

const SERVICE_SCRIPT = fileURLToPath(new URL("./restart-service.ts", import.meta.url));

/**
 * Node arguments for every service child (e.g. `--cpu-prof`); they start
 * with LEASEHOLD_BENCH_SERVICE_NODE_ARGS, to try a V8 setting on the
 * service alone.
 */
export const serviceNodeArgs: string[] = (process.env.LEASEHOLD_BENCH_SERVICE_NODE_ARGS ?? "").split(" ").filter(Boolean);

/** Resident set size of a process in MB, from /proc. */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return round(kb / 1024, 1);
}

/** A service child process and what it said. */
export interface ServiceChild {
  readonly child: ChildProcess;
  readonly lines: Record<string, unknown>[];
  stderr: string;
}

const CLI = fileURLToPath(new URL("../bin/leasehold.js", import.meta.url));

/**
 * A service child on `url` under `prefix`: bench/restart-service.ts through
 * tsx, or with `cli` the service as a user runs it, `leasehold serve`
 * (bin/leasehold.js, which runs the built dist/ when it is current), logging
 * at `logLevel` (default LEASEHOLD_LOG_LEVEL, else warn). JSON lines it
 * prints are kept in `lines`.
 */
export function spawnService(url: string, prefix: string, maxTtlMs = 30_000, cli = false, logLevel?: string): ServiceChild {
  const entry = cli ? [CLI, "serve"] : ["--import", "tsx", SERVICE_SCRIPT];
  const child = spawn(
    process.execPath,
    [...serviceNodeArgs, ...entry, "--nats", url, "--prefix", prefix, "--max-ttl-ms", String(maxTtlMs)],
    {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, LEASEHOLD_LOG_LEVEL: logLevel ?? process.env.LEASEHOLD_LOG_LEVEL ?? "warn" },
    },
  );
  const service: ServiceChild = { child, lines: [], stderr: "" };
  let buffered = "";
  child.stdout.on("data", (c: Buffer) => {
    buffered += c.toString();
    let nl;
    while ((nl = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      try {
        service.lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not a JSON line: nothing the benches read
      }
    }
  });
  child.stderr.on("data", (c: Buffer) => (service.stderr = (service.stderr + c.toString()).slice(-4000)));
  return service;
}

/**
 * `leasehold serve` of the checkout whose bin/leasehold.js is `cli` (its
 * built dist/ when current), with `args` after `serve`, logging at warn;
 * the tail of its stderr is kept.
 */
export function spawnServeOf(cli: string, args: readonly string[]): ServiceChild {
  const child = spawn(process.execPath, [...serviceNodeArgs, cli, "serve", ...args], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, LEASEHOLD_LOG_LEVEL: "warn" },
  });
  const service: ServiceChild = { child, lines: [], stderr: "" };
  child.stderr.on("data", (c: Buffer) => (service.stderr = (service.stderr + c.toString()).slice(-4000)));
  return service;
}

/** Polls `subject` until it answers without an error header; ms from `since`. */
export async function firstAnswer(nc: NatsConnection, subject: string, body: unknown, since: number, child: ChildProcess): Promise<number> {
  const deadline = performance.now() + 180_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited (${child.exitCode}) before answering ${subject}`);
    try {
      const reply = await nc.request(subject, json(body), { timeout: 1000 });
      if (succeeded(reply)) return performance.now() - since;
    } catch {
      // no responders yet, or a timeout: ask again
    }
    if (performance.now() > deadline) throw new Error(`${subject} not answered within 180 s`);
    await sleep(5);
  }
}

/** SIGTERM, then the child's stop figures (or SIGKILL after 20 s). */
export async function stopService(service: ServiceChild): Promise<{ exitCode: number | null; stopMs: number | undefined }> {
  const exited = new Promise<void>((resolve) => service.child.once("exit", () => resolve()));
  if (service.child.exitCode === null) {
    service.child.kill("SIGTERM");
    const timer = setTimeout(() => service.child.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(timer);
  }
  const stop = service.lines.find((l) => "stopMs" in l);
  return { exitCode: service.child.exitCode, stopMs: stop === undefined ? undefined : round(stop.stopMs as number) };
}

/** Acquires `count` locks named `held-<i>` for `ttlMs` through the service under `prefix`, 64 at a time; how many failed. */
export async function acquireHeld(
  nc: NatsConnection,
  prefix: string,
  count: number,
  ttlMs: number,
  progress: (line: string) => void,
): Promise<number> {
  let next = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < count) {
        const i = next++;
        try {
          const reply = await nc.request(`${prefix}.v1.lock.acquire`, json({ name: `held-${i}`, owner: "bench", ttlMs }), {
            timeout: 10_000,
          });
          if (!succeeded(reply)) failed++;
        } catch {
          failed++;
        }
        if (i % 20_000 === 0 && i > 0) progress(`${prefix}: acquired ${i} leases`);
      }
    }),
  );
  return failed;
}

/**
 * `held` lock leases acquired through a fresh service child (its own
 * prefix), and its RSS before, right after the last acquire and 10 s later
 * (no forced GC: what the machine gives the service).
 */
export async function heldLocksMemory(
  nc: NatsConnection,
  url: string,
  held: number,
  progress: (line: string) => void,
  cli = false,
  /** Also read the RSS this many seconds after the last acquire (those beyond the 10 s one, in order), e.g. to see V8 give memory back. */
  laterS: readonly number[] = [],
) {
  const prefix = `rbenchmem${randomUUID().slice(0, 8)}`;
  const ttlMs = 600_000;
  const t0 = performance.now();
  const service = spawnService(url, prefix, ttlMs, cli);
  try {
    await firstAnswer(nc, `${prefix}.v1.lock.get`, { name: "x" }, t0, service.child);
    const rssEmptyMb = rssMb(service.child.pid!);
    const t1 = performance.now();
    const failed = await acquireHeld(nc, prefix, held, ttlMs, progress);
    const acquireSeconds = (performance.now() - t1) / 1000;
    const rssHeldMb = rssMb(service.child.pid!);
    await sleep(10_000);
    const rssHeld10sMb = rssMb(service.child.pid!);
    const rssLaterMb: { afterS: number; mb: number }[] = [];
    let waitedS = 10;
    for (const afterS of [...new Set(laterS)].filter((s) => s > 10).sort((a, b) => a - b)) {
      await sleep((afterS - waitedS) * 1000);
      waitedS = afterS;
      const mb = rssMb(service.child.pid!);
      rssLaterMb.push({ afterS, mb });
      progress(`RSS ${afterS} s after the last acquire: ${mb} MB`);
    }
    const stop = await stopService(service);
    return {
      prefix,
      held,
      failed,
      acquiresPerSec: round(held / acquireSeconds),
      rssEmptyMb,
      rssHeldMb,
      rssHeld10sMb,
      rssLaterMb,
      /** KB of RSS per held lock over the empty service's, 10 s after the last acquire. */
      kbPerHeldLock: round(((rssHeld10sMb - rssEmptyMb) * 1024) / held, 2),
      stopMs: stop.stopMs,
      exitCode: stop.exitCode,
      warnings: service.stderr.trim().slice(-600),
    };
  } finally {
    if (service.child.exitCode === null) service.child.kill("SIGKILL");
  }
}
