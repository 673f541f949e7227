/**
 * A request you can read top to bottom: the files of `src/` that one warm
 * `lock.acquire` runs code in, counted by V8's precise coverage (the files
 * whose call counts move during that one request), over a service in this
 * process and a plain NATS request from a connection of its own. A file
 * counts when its counts move in every one of several single requests, so a
 * timer that happens to fire during one of them (a sweep, a follower's
 * heartbeat) is not taken for the request's path.
 */
import { readFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { fileURLToPath } from "node:url";
import type { NatsConnection } from "@nats-io/nats-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInbox, type Msg } from "@nats-io/nats-core";
import { publishCommand } from "../support/durable.ts";
import { connectNats, startTestService, uniquePrefix, type TestService } from "../support/nats.ts";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));
/** The most files of `src/` a warm acquire may run code in, as a request/reply and as a durable command. */
const MAX_REQUEST_FILES = 12;
const MAX_DURABLE_FILES = 14;
const WARM = 2_000;
const TRIALS = 5;

interface ScriptCoverage {
  readonly url: string;
  readonly functions: readonly { readonly functionName: string; readonly ranges: readonly { readonly count: number }[] }[];
}

let svc: TestService;
let client: NatsConnection;
let prefix: string;
const session = new Session();
const encoder = new TextEncoder();
let n = 0;

/** The files of src/ whose call counts moved since the last take. */
async function filesRun(): Promise<Set<string>> {
  const { result } = (await session.post("Profiler.takePreciseCoverage")) as { result: ScriptCoverage[] };
  const files = new Set<string>();
  for (const script of result) {
    const path = script.url.startsWith("file://") ? fileURLToPath(script.url) : script.url;
    if (!path.startsWith(SRC)) continue;
    if (script.functions.some((f) => (f.ranges[0]?.count ?? 0) > 0)) files.add(path.slice(SRC.length));
    // REQUEST_FILES_FUNCTIONS=1 also prints the functions that ran, to see what a new file on the path does there.
    if (process.env.REQUEST_FILES_FUNCTIONS === "1") {
      for (const f of script.functions) if ((f.ranges[0]?.count ?? 0) > 0) console.log(`  ${path.slice(SRC.length)} ${f.functionName}`);
    }
  }
  return files;
}

async function acquire(): Promise<void> {
  const body = { name: `req-files-${n++}`, owner: "o", ttlMs: 20_000, requestId: `r-${n}` };
  const reply = await client.request(`${prefix}.v1.lock.acquire`, encoder.encode(JSON.stringify(body)), { timeout: 5_000 });
  expect(reply.json<{ lease?: unknown }>().lease, reply.string()).toBeDefined();
}

/** The files of src/ that docs/design.md's walkthrough of `lock.acquire` names, sorted. */
function walkedFiles(): string[] {
  const design = readFileSync(new URL("../../docs/design.md", import.meta.url), "utf8");
  const walk = /<!-- walkthrough: lock\.acquire -->([\s\S]*?)<!-- \/walkthrough -->/.exec(design)?.[1] ?? "";
  return [...new Set([...walk.matchAll(/`src\/([\w/.-]+\.ts)#/g)].map((m) => m[1]!))].sort();
}

/** Replies to durable commands, in order of arrival. */
let durableReplies: { inbox: string; next(): Promise<Msg> };

/** A durable `lock.acquire`, published to the command stream, its answer awaited on `Leasehold-Reply-To`. */
async function durableAcquire(): Promise<void> {
  const body = { name: `req-files-${n++}`, owner: "o", ttlMs: 20_000, requestId: `r-${n}` };
  const reply = durableReplies.next();
  await publishCommand(client, prefix, "lock.acquire", body, durableReplies.inbox);
  const m = await reply;
  expect(m.json<{ lease?: unknown }>().lease, m.string()).toBeDefined();
}

/** The files every one of `TRIALS` single requests ran code in (the first list seen, for the message). */
async function filesOfOneRequest(send: () => Promise<void>): Promise<string[]> {
  let common: Set<string> | undefined;
  for (let t = 0; t < TRIALS; t++) {
    await filesRun();
    await send();
    const files = await filesRun();
    common = common === undefined ? files : new Set([...common].filter((f) => files.has(f)));
  }
  return [...common!].sort();
}

beforeAll(async () => {
  prefix = uniquePrefix();
  svc = await startTestService(prefix);
  client = await connectNats();
  const inbox = createInbox();
  const waiting: ((m: Msg) => void)[] = [];
  client.subscribe(inbox, { callback: (_e, m) => waiting.shift()?.(m) });
  durableReplies = {
    inbox,
    next: () =>
      new Promise<Msg>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no answer to a durable command in 10 s")), 10_000);
        waiting.push((m) => {
          clearTimeout(timer);
          resolve(m);
        });
      }),
  };
  for (let i = 0; i < WARM; i++) await acquire();
  for (let i = 0; i < WARM / 4; i++) await durableAcquire();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.startPreciseCoverage", { callCount: true, detailed: false });
}, 120_000);

afterAll(async () => {
  await session.post("Profiler.stopPreciseCoverage").catch(() => undefined);
  session.disconnect();
  await client?.drain();
  await svc?.stop();
});

describe("one warm lock.acquire", () => {
  it(`runs code in at most ${MAX_REQUEST_FILES} files of src/`, async () => {
    const files = await filesOfOneRequest(acquire);
    console.log(`lock.acquire runs code in ${files.length} files:\n  ${files.join("\n  ")}`);
    expect(files.length, files.join(", ")).toBeLessThanOrEqual(MAX_REQUEST_FILES);
    // docs/design.md walks these files, no more and no fewer.
    expect(walkedFiles(), "docs/design.md's walkthrough of lock.acquire").toEqual(files);
  });

  it(`as a durable command runs code in at most ${MAX_DURABLE_FILES} files of src/`, async () => {
    const files = await filesOfOneRequest(durableAcquire);
    console.log(`a durable lock.acquire runs code in ${files.length} files:\n  ${files.join("\n  ")}`);
    expect(files.length, files.join(", ")).toBeLessThanOrEqual(MAX_DURABLE_FILES);
  });
});
