/**
 * Every write only the service may make, tried by a connection that is not
 * the service: each must be refused by the server's permissions (not merely
 * fail for lack of a stream or a reply), and nothing it guards may change.
 */
import { expect } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { COMMAND_CONSUMER } from "../../src/transport/command-consumer.ts";
import type { Subjects } from "../../src/contract/subjects.ts";

/** One forbidden write: the subject published to and why only the service may. */
export interface ForbiddenWrite {
  readonly subject: string;
  readonly what: string;
  /** The request body; none for requests the server wants empty (delete, purge, next). */
  readonly body?: unknown;
}

/** The writes reserved to the service of `subjects`' prefix; `otherInbox` is another client's inbox prefix, when clients have their own. */
export function serviceOnlyWrites(subjects: Subjects, otherInbox?: string): ForbiddenWrite[] {
  const { eventStream: events, commandStream: commands, projectionBucket: bucket } = subjects;
  const objStream = `OBJ_${bucket}`;
  const writes: ForbiddenWrite[] = [
    { subject: subjects.event("lock", "forged"), what: "append an event (forge history)", body: {} },
    { subject: subjects.commandError("lock.reset"), what: "report a durable command as failed", body: {} },
    // A snapshot is trusted when the stream still holds its sequence: writing one would forge an actor's state.
    { subject: `$O.${bucket}.M.bG9jaw==`, what: "replace a projection snapshot's metadata", body: {} },
    { subject: `$O.${bucket}.C.forgedchunk`, what: "write a projection snapshot chunk", body: {} },
    // Snapshots once lived in a KV bucket of the same name: neither that bucket's keys nor its stream are anyone's to write.
    { subject: `$KV.${bucket}.lock`, what: "write a snapshot key in a bucket of the service's name", body: {} },
    {
      subject: `$JS.API.STREAM.CREATE.KV_${bucket}`,
      what: "create a KV bucket of the service's name",
      body: { name: `KV_${bucket}`, subjects: [`$KV.${bucket}.>`] },
    },
    // Taking, dropping or redirecting durable commands.
    {
      subject: `$JS.API.CONSUMER.CREATE.${commands}`,
      what: "create a consumer on the command stream",
      body: { stream_name: commands, config: {} },
    },
    {
      subject: `$JS.API.CONSUMER.CREATE.${commands}.thief`,
      what: "create a named consumer on the command stream",
      body: { stream_name: commands, config: { name: "thief" } },
    },
    {
      subject: `$JS.API.CONSUMER.MSG.NEXT.${commands}.${COMMAND_CONSUMER}`,
      what: "pull the service's durable commands",
      body: { batch: 1 },
    },
    { subject: `$JS.ACK.${commands}.${COMMAND_CONSUMER}.1.1.1.0.0`, what: "acknowledge (drop) a durable command" },
  ];
  for (const stream of [events, commands, objStream]) {
    const config = { name: stream, subjects: ["forged.>"] };
    writes.push(
      { subject: `$JS.API.STREAM.CREATE.${stream}`, what: `create ${stream}`, body: config },
      { subject: `$JS.API.STREAM.UPDATE.${stream}`, what: `change ${stream}'s configuration`, body: config },
      { subject: `$JS.API.STREAM.DELETE.${stream}`, what: `delete ${stream}` },
      { subject: `$JS.API.STREAM.PURGE.${stream}`, what: `purge ${stream}`, body: {} },
      {
        subject: `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.thief`,
        what: `create a durable consumer on ${stream}`,
        body: { stream_name: stream, config: { durable_name: "thief" } },
      },
      { subject: `$JS.API.CONSUMER.DELETE.${stream}.${COMMAND_CONSUMER}`, what: `delete a consumer of ${stream}` },
    );
  }
  if (otherInbox !== undefined) writes.push({ subject: `${otherInbox}.forged`, what: "answer another client's request", body: {} });
  return writes;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\$]/g, "\\$&");

/**
 * Tries every write of {@link serviceOnlyWrites} as `nc`, one at a time, and
 * expects each to be refused for its own subject (a request the server lets
 * through gets an answer, no responders or a timeout instead, and fails);
 * then checks the guarded streams are as they were.
 */
export async function expectServiceOnlyWritesRefused(nc: NatsConnection, service: NatsConnection, subjects: Subjects, otherInbox?: string) {
  const jsm = await jetstreamManager(service);
  const objStream = `OBJ_${subjects.projectionBucket}`;
  const state = async () =>
    Promise.all(
      [subjects.eventStream, subjects.commandStream, objStream].map(async (name) => {
        const info = await jsm.streams.info(name);
        return { name, messages: info.state.messages, subjects: info.config.subjects, consumers: info.state.consumer_count };
      }),
    );
  const before = await state();
  const writes = serviceOnlyWrites(subjects, otherInbox);
  for (const write of writes) {
    const body = write.body === undefined ? undefined : JSON.stringify(write.body);
    const outcome = await nc.request(write.subject, body, { timeout: 2000 }).then(
      (m) => `answered: ${m.string()}`,
      (e: Error) => e.message,
    );
    expect.soft(outcome, write.what).toMatch(new RegExp(`Permissions Violation for Publish to "${escape(write.subject)}"`));
  }
  expect(await state()).toEqual(before);
  return writes.length;
}
