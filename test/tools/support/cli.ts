/**
 * Helpers for the operator tools' integration tests: running `leasehold
 * <tool>` as a child process (as an operator would), and writing raw bytes
 * straight into a prefix's event stream, bypassing the service.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { JetStreamEventLog } from "../../../src/events/jetstream-event-log.ts";
import { type StoredMessage } from "../../../src/events/event-log.ts";
import { Subjects } from "../../../src/contract/subjects.ts";
import { exitOf } from "../../support/child-exit.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const BIN = fileURLToPath(new URL("../../../bin/leasehold.js", import.meta.url));

/** A running `leasehold` child process. */
export interface CliProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  stdout(): string;
  stderr(): string;
  /** Kills it if still running (call in afterEach/finally). */
  kill(): Promise<void>;
}

/** Starts `node bin/leasehold.js <args>` with the developer's LEASEHOLD_* settings removed. */
export function startCli(args: readonly string[], env: Record<string, string> = {}): CliProcess {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("LEASEHOLD_") && k !== "NATS_URL"));
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...base, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr.on("data", (c: Buffer) => (err += c.toString()));
  const exited = exitOf(child).then((e) => e.code);
  return {
    child,
    exited,
    stdout: () => out,
    stderr: () => err,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL");
        await exited;
      }
    },
  };
}

/** Runs `leasehold <args>` to completion. */
export async function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cli = startCli(args, env);
  const code = await cli.exited;
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

/** Creates the prefix's event stream as the service would (if missing) and opens it. */
export function openEventLog(nc: NatsConnection, prefix: string): Promise<JetStreamEventLog> {
  const subjects = new Subjects(prefix);
  return JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
}

/**
 * Publishes messages in order straight into the prefix's event stream: no
 * expected sequence, no message id, pipelined in batches of `batch`
 * awaiting the acknowledgements (the order within a batch is the order of
 * publishing on one connection, which JetStream keeps).
 */
export async function publishRaw(
  nc: NatsConnection,
  prefix: string,
  messages: Iterable<Pick<StoredMessage, "subject" | "payload">>,
  batch = 500,
): Promise<number> {
  await openEventLog(nc, prefix);
  const js = jetstream(nc);
  let pending: Promise<unknown>[] = [];
  let last = 0;
  for (const m of messages) {
    pending.push(js.publish(m.subject, m.payload).then((ack) => (last = Math.max(last, ack.seq))));
    if (pending.length >= batch) {
      await Promise.all(pending);
      pending = [];
    }
  }
  await Promise.all(pending);
  return last;
}
