/**
 * Appends pipelined on one reply inbox, against a real nats-server: many in
 * flight at once each settle by their own headers; a conflict fails only its
 * own append; no stream is a definite failure; no answer by the deadline an
 * ambiguous one; and the reply inbox follows the connection's inbox prefix.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { AppendPipe } from "../../src/events/jetstream-event-log.ts";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { LogUnavailableError, WrongLastSequenceError } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { connect } from "@nats-io/transport-node";
import { connectNats, natsUrl, uniquePrefix } from "../support/nats.ts";

const payload = new TextEncoder().encode('{"type":"X"}');

describe("AppendPipe", () => {
  const closing: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0)) await close();
  });

  async function withStream(): Promise<{ nc: NatsConnection; subjects: Subjects; pipe: AppendPipe }> {
    const subjects = new Subjects(uniquePrefix());
    const nc = await connectNats();
    await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 60_000 });
    const pipe = new AppendPipe(nc, 10);
    closing.push(async () => {
      pipe.close();
      await (await jetstreamManager(nc)).streams.delete(subjects.eventStream);
      await nc.close();
    });
    return { nc, subjects, pipe };
  }

  it("settles 64 appends in flight at once by their own headers: a stale expected sequence fails alone", async () => {
    const { subjects, pipe } = await withStream();
    const first = await pipe.append({
      subject: subjects.event("lock", "a0"),
      payload,
      msgId: "m-first",
      expectedLastSubjectSeq: 0,
      timeoutMs: 5000,
    });
    const results = await Promise.allSettled(
      Array.from({ length: 64 }, (_, i) =>
        pipe.append({
          subject: subjects.event("lock", `a${i}`),
          payload,
          msgId: `m-${i}`,
          // a0 holds one message already: expecting 0 on it is stale.
          expectedLastSubjectSeq: 0,
          timeoutMs: 5000,
        }),
      ),
    );
    const failed = results.flatMap((r, i) => (r.status === "rejected" ? [[i, r.reason as Error] as const] : []));
    expect(failed.map(([i]) => i)).toEqual([0]);
    expect(failed[0]![1]).toBeInstanceOf(WrongLastSequenceError);
    expect((failed[0]![1] as WrongLastSequenceError).actual).toBe(first.seq);
    const seqs = results.flatMap((r) => (r.status === "fulfilled" ? [r.value.seq] : []));
    expect(new Set(seqs).size).toBe(63);
    expect(pipe.size).toBe(0);
  });

  it("answers a repeated message id as a duplicate at the first one's sequence", async () => {
    const { subjects, pipe } = await withStream();
    const subject = subjects.event("lock", "d");
    const a = await pipe.append({ subject, payload, msgId: "same", expectedLastSubjectSeq: 0, timeoutMs: 5000 });
    // Expecting the subject's current last sequence, so every server line reaches its duplicate window
    // (2.11 and later check the expected sequence first; the event log handles that case above the pipe).
    const b = await pipe.append({ subject, payload, msgId: "same", expectedLastSubjectSeq: a.seq, timeoutMs: 5000 });
    expect(a.duplicate).toBe(false);
    expect(b).toEqual({ seq: a.seq, duplicate: true });
  });

  it("fails definitely when no stream takes the subject, and ambiguously when nobody answers in time", async () => {
    const { nc, pipe } = await withStream();
    const nowhere = `${uniquePrefix()}.nowhere`;
    const noStream = pipe.append({ subject: nowhere, payload, msgId: "n", expectedLastSubjectSeq: 0, timeoutMs: 5000 });
    await expect(noStream).rejects.toMatchObject({ name: "LogUnavailableError", ambiguous: false });
    // A subscriber that swallows the message: JetStream-like silence, as when the ack is lost.
    const silent = `${uniquePrefix()}.silent`;
    const sub = nc.subscribe(silent, { callback: () => undefined });
    await nc.flush();
    const started = performance.now();
    const lost = pipe.append({ subject: silent, payload, msgId: "s", expectedLastSubjectSeq: 0, timeoutMs: 100 });
    const error = await lost.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LogUnavailableError);
    expect((error as LogUnavailableError).ambiguous).toBe(true);
    expect(performance.now() - started).toBeLessThan(2000);
    sub.unsubscribe();
  });

  it("takes its reply inbox under the connection's inbox prefix", async () => {
    const subjects = new Subjects(uniquePrefix());
    const nc = await connect({ servers: natsUrl(), inboxPrefix: "_INBOX_pipe" });
    await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 60_000 });
    const seen: string[] = [];
    const spy = await connectNats();
    const sub = spy.subscribe("_INBOX_pipe.>", { callback: (_e, m) => void seen.push(m.subject) });
    await spy.flush();
    const pipe = new AppendPipe(nc);
    closing.push(async () => {
      pipe.close();
      sub.unsubscribe();
      await (await jetstreamManager(nc)).streams.delete(subjects.eventStream);
      await Promise.all([nc.close(), spy.close()]);
    });
    await pipe.append({ subject: subjects.event("lock", "p"), payload, msgId: "p", expectedLastSubjectSeq: 0, timeoutMs: 5000 });
    await spy.flush();
    expect(seen.length).toBeGreaterThan(0);
  });
});
