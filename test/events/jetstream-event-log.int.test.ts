import { afterEach, describe, expect, it } from "vitest";
import { nanos, type NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager, StorageType } from "@nats-io/jetstream";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { eventLogContract } from "../support/contract-event-log.ts";
import { connectNats, uniquePrefix } from "../support/nats.ts";

/** Opens a log on its own stream and connection; cleanup deletes the stream and closes the connection. */
async function openLog(
  dedupWindowMs = 120_000,
): Promise<{ log: JetStreamEventLog; nc: NatsConnection; subjects: Subjects; cleanup: () => Promise<void> }> {
  const subjects = new Subjects(uniquePrefix());
  const nc = await connectNats();
  try {
    const log = await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs });
    return {
      log,
      nc,
      subjects,
      cleanup: async () => {
        try {
          const jsm = await jetstreamManager(nc);
          await jsm.streams.delete(subjects.eventStream);
        } finally {
          await nc.close();
        }
      },
    };
  } catch (e) {
    await nc.close();
    throw e;
  }
}

eventLogContract("JetStreamEventLog", async () => {
  const opened = await openLog();
  return { log: opened.log, subjectPrefix: `${opened.subjects.prefix}.events`, cleanup: opened.cleanup };
});

describe("JetStreamEventLog stream", () => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it("creates the stream as docs/protocol.md says: file storage, the dedup window, no delete, no purge", async () => {
    const opened = await openLog(45_000);
    cleanup = opened.cleanup;
    const jsm = await jetstreamManager(opened.nc);
    const info = await jsm.streams.info(opened.subjects.eventStream);
    expect(info.config.name).toBe(opened.subjects.eventStream);
    expect(info.config.subjects).toEqual([`${opened.subjects.prefix}.events.>`]);
    expect(info.config.storage).toBe(StorageType.File);
    expect(info.config.duplicate_window).toBe(nanos(45_000));
    expect(info.config.deny_delete).toBe(true);
    expect(info.config.deny_purge).toBe(true);
  });

  it("gives a scanned message's id as its header's bytes, the same as the id the headers give", async () => {
    const opened = await openLog();
    cleanup = opened.cleanup;
    const subject = `${opened.subjects.prefix}.events.lock.a`;
    const msgIds = ["t.events.lock.a|acquire|0123456789abcdef|req-1", "with space", "naïve"];
    for (const [i, msgId] of msgIds.entries())
      await opened.log.append(subject, new TextEncoder().encode(`{"n":${i}}`), { expectedLastSubjectSeq: i, msgId });
    const seen: [string | undefined, string | undefined][] = [];
    await opened.log.scan(
      { filter: subject },
      (m) => {
        const bytes = m.msgIdBytes?.();
        seen.push([m.msgId, bytes === undefined ? undefined : Buffer.from(bytes).toString("latin1")]);
      },
      10_000,
    );
    // Plain ASCII is read from the bytes; a space or UTF-8 is left to the client's headers.
    expect(seen).toEqual([
      [msgIds[0], msgIds[0]],
      [msgIds[1], undefined],
      [msgIds[2], undefined],
    ]);
  });

  it("opens an existing stream without changing it, so a second instance can share it", async () => {
    const first = await openLog();
    cleanup = first.cleanup;
    const stream = first.subjects.eventStream;
    const appended = await first.log.append(`${first.subjects.prefix}.events.lock.a`, new TextEncoder().encode("x"), {
      expectedLastSubjectSeq: 0,
      msgId: "one",
    });
    const second = await JetStreamEventLog.open(first.nc, { stream, subjects: first.subjects.allEvents, dedupWindowMs: 120_000 });
    expect(await second.lastSeq()).toBe(appended.seq);
    expect(await second.lastSubjectSeq(`${first.subjects.prefix}.events.lock.a`)).toBe(appended.seq);
  });
});
