/**
 * Helpers for durable-command tests: publishing commands into the command
 * stream, collecting replies, running the service as a child process that can
 * be killed with SIGKILL, and reading an actor kind's events back.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { headers, type NatsConnection, type Msg } from "@nats-io/nats-core";
import { jetstream, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { isUnparsable, type EventEnvelope } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { exitOf } from "./child-exit.ts";

/** Publishes one durable command with `Nats-Msg-Id` = requestId and an optional reply subject. */
export async function publishCommand(
  nc: NatsConnection,
  prefix: string,
  kindOp: string,
  body: Record<string, unknown>,
  replyTo?: string,
): Promise<void> {
  const h = headers();
  if (typeof body.requestId === "string") h.set("Nats-Msg-Id", body.requestId);
  if (replyTo !== undefined) h.set("Leasehold-Reply-To", replyTo);
  await jetstream(nc).publish(`${prefix}.cmd.${kindOp}`, JSON.stringify(body), { headers: h });
}

/**
 * Creates the command stream as the service would, so commands can be
 * published before any service has run (the service finds it and carries on).
 */
export async function createCommandStream(nc: NatsConnection, prefix: string): Promise<void> {
  const subjects = new Subjects(prefix);
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({
    name: subjects.commandStream,
    subjects: [`${prefix}.cmd.>`],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
  });
}

/** Collects every message on a subject until stopped. */
export function collect(nc: NatsConnection, subject: string): { messages: Msg[]; stop(): void } {
  const messages: Msg[] = [];
  const sub = nc.subscribe(subject, { callback: (_e, m) => void messages.push(m) });
  return { messages, stop: () => sub.unsubscribe() };
}

/** Every event on `<prefix>.events.<kind>.*`, decoded. */
export async function eventsOfKind(nc: NatsConnection, prefix: string, kind: string): Promise<EventEnvelope[]> {
  const subjects = new Subjects(prefix);
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(subjects.eventStream);
  if (info.state.messages === 0) return [];
  const consumer = await jetstream(nc).consumers.get(subjects.eventStream, { filter_subjects: `${prefix}.events.${kind}.*` });
  const out: EventEnvelope[] = [];
  const ci = await consumer.info(true);
  if (ci.num_pending === 0) return out;
  const iter = await consumer.consume();
  for await (const m of iter) {
    const entry = decodeEvent(m.data, m.seq);
    if (!isUnparsable(entry)) out.push(entry.event);
    if (m.info.pending === 0) break;
  }
  await iter.close();
  return out;
}

/** A `leasehold serve` child process. */
export interface ServeProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  output(): string;
}

/** Starts `node bin/leasehold.js serve` against `url` with `prefix` and extra flags. */
export function spawnServe(url: string, prefix: string, extra: string[] = [], env: Record<string, string> = {}): ServeProcess {
  const child = spawn(process.execPath, ["bin/leasehold.js", "serve", "--nats", url, "--prefix", prefix, ...extra], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  let out = "";
  child.stdout.on("data", (c: Buffer) => (out += c.toString()));
  child.stderr.on("data", (c: Buffer) => (out += c.toString()));
  const exited = exitOf(child).then((e) => e.code);
  return { child, exited, output: () => out };
}

/**
 * Durable commands with their replies: `send` publishes one with
 * `Leasehold-Reply-To: replies.<prefix>.<requestId>` (outside the service's namespace, where a reply may go), and `replies` collects
 * what the service answers there, read back by requestId with `byRequestId`.
 */
export function durableReplies(nc: NatsConnection, prefix: string) {
  const replies = collect(nc, `replies.${prefix}.>`);
  return {
    replies,
    send: (kindOp: string, body: Record<string, unknown>) =>
      publishCommand(nc, prefix, kindOp, body, `replies.${prefix}.${String(body.requestId)}`),
    byRequestId: <B>() => new Map(replies.messages.map((m) => [m.subject.slice(`replies.${prefix}.`.length), JSON.parse(m.string()) as B])),
  };
}
