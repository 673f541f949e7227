/**
 * The tools' stream source on a real nats-server: it reads exactly the
 * messages within the bounds, and --until by time stops at the last message
 * the server stored at or before that instant (times as the server stamped
 * them, read back, so no clock of the test is involved).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { type StoredMessage } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { auditSource } from "../../src/tools/audit.ts";
import { foldSource } from "../../src/tools/replay.ts";
import { natsSource } from "../../src/tools/stream-reader.ts";
import { ToolConnectionError } from "../../src/tools/errors.ts";
import { scanStream } from "../../src/events/jetstream-scan.ts";
import { jetstream } from "@nats-io/jetstream";
import { connectNats, uniquePrefix } from "../support/nats.ts";
import { openEventLog, publishRaw } from "./support/cli.ts";

const encoder = new TextEncoder();
let nc: NatsConnection | undefined;
afterEach(async () => {
  await nc?.close();
  nc = undefined;
});

describe("natsSource", () => {
  it("reads every message in order, stops at --until by sequence or time, and the folds agree with the bounds", async () => {
    nc = await connectNats();
    const prefix = uniquePrefix();
    const subjects = new Subjects(prefix);
    const at = new Date().toISOString();
    const messages = Array.from({ length: 3000 }, (_, i) => {
      const host = `h${i % 50}`;
      const event = { type: "HostStateSet", v: 1, at, kind: "host", id: host, data: { healthy: i % 2 === 0, draining: false } };
      return { subject: subjects.event("host", host), payload: encoder.encode(JSON.stringify(event)) };
    });
    const last = await publishRaw(nc, prefix, messages, 250);
    const source = natsSource(nc, subjects);
    expect(await source.lastSeq()).toBe(last);

    const read: StoredMessage[] = [];
    await source.read({}, (m) => void read.push(m));
    expect(read.map((m) => m.seq)).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    for (let i = 1; i < read.length; i++) expect(read[i]!.time).toBeGreaterThanOrEqual(read[i - 1]!.time);
    // The same messages, sequences and stored instants as the event log's reader (its own consumer, its own parse).
    const fields = (m: StoredMessage) => ({ seq: m.seq, subject: m.subject, time: m.time, payload: [...m.payload] });
    const logged: StoredMessage[] = [];
    for await (const m of (await openEventLog(nc, prefix)).readStream()) logged.push(m);
    expect(read.map(fields)).toEqual(logged.map(fields));

    // A bound in the middle, by the server's own stamps: everything stored at or before it, nothing after.
    const middle = read[Math.floor(read.length / 2)]!.time;
    const expectedSeq = read.filter((m) => m.time <= middle).at(-1)!.seq;
    const byTime = await foldSource(source, subjects, { toTime: middle });
    expect(byTime.fold.seq).toBe(expectedSeq);
    expect(byTime.fold.messages).toBe(expectedSeq);

    const bySeq = await foldSource(source, subjects, { toSeq: 1234, sinceSeq: 1200 });
    expect(bySeq.fold.seq).toBe(1234);
    expect(bySeq.changed?.size).toBe(35);

    const audit = await auditSource(source, subjects, { cooldownMs: 1000, maxTtlMs: 60_000, fromTime: middle, toTime: middle });
    expect(audit.read).toBe(expectedSeq);
    expect(audit.checked).toBe(read.filter((m) => m.time === middle).length);
    expect(audit.violations).toBe(0);
  });

  it("ends a read at once when its connection closes, as a connection failure naming the stream (exit 2), not a stall 10 s later", async () => {
    nc = await connectNats();
    const prefix = uniquePrefix();
    const subjects = new Subjects(prefix);
    const event = {
      type: "HostStateSet",
      v: 1,
      at: new Date().toISOString(),
      kind: "host",
      id: "h",
      data: { healthy: true, draining: false },
    };
    await publishRaw(nc, prefix, [{ subject: subjects.event("host", "h"), payload: encoder.encode(JSON.stringify(event)) }], 1);
    // A connection that has closed already: the read learns it before any message arrives.
    const closed = Promise.resolve(new Error("connection refused"));
    await expect(
      scanStream(jetstream(nc), subjects.eventStream, { toSeq: 1, filter: subjects.allEvents }, () => undefined, 60_000, closed),
    ).rejects.toThrow("the NATS connection closed (connection refused) after 0 messages");

    const gone = await connectNats();
    await gone.close();
    const failure = await natsSource(gone, subjects)
      .read({ toSeq: 1 }, () => undefined)
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ToolConnectionError);
    expect((failure as ToolConnectionError).exitCode).toBe(2);
    expect((failure as Error).message).toMatch(new RegExp(`^reading ${subjects.eventStream} failed: .*; run the command again$`));
  });
});
