/**
 * The write watch on a real server: it counts the writes to its filter that
 * its own log did not make (another connection's, another log's on the same
 * connection), not its own appends, and stops counting once stopped.
 */
import { afterEach, describe, expect, it } from "vitest";
import { jetstream } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { connectNats, uniquePrefix } from "../support/nats.ts";

const opened: NatsConnection[] = [];
afterEach(async () => {
  for (const nc of opened.splice(0)) await nc.close();
});

async function logOn(nc: NatsConnection, subjects: Subjects): Promise<JetStreamEventLog> {
  return JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
}

const payload = new TextEncoder().encode("{}");

describe("JetStreamEventLog.watchWrites", () => {
  it("counts others' writes to its filter, never its own appends", async () => {
    const subjects = new Subjects(uniquePrefix());
    const nc = await connectNats();
    const other = await connectNats();
    opened.push(nc, other);
    const log = await logOn(nc, subjects);
    const watch = await log.watchWrites(subjects.eventsOfKind("proxy"), 2000);
    expect(watch.live).toBe(true);

    for (let i = 0; i < 5; i++)
      await log.append(subjects.event("proxy", `p${i}`), payload, { expectedLastSubjectSeq: 0, msgId: `own-${i}` });
    // Another kind's events are outside the filter.
    await jetstream(other).publish(subjects.event("lock", "l"), payload);
    await nc.flush();
    expect(watch.changes).toBe(0);

    await jetstream(other).publish(subjects.event("proxy", "p0"), payload);
    // A second log on the same connection has its own append inbox: its writes are another writer's.
    const second = await logOn(nc, subjects);
    await second.append(subjects.event("proxy", "p9"), payload, { expectedLastSubjectSeq: 0, msgId: "second" });
    await nc.flush();
    expect(watch.changes).toBe(2);

    watch.stop();
    expect(watch.live).toBe(false);
    await jetstream(other).publish(subjects.event("proxy", "p1"), payload);
    await nc.flush();
    expect(watch.changes).toBe(2);
  });
});
