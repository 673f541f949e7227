/**
 * A follower's "caught up?" against writes acknowledged to another
 * connection. nats-server acknowledges an append before it tells the
 * stream's consumers of it (the signal goes through a queue of its own), so
 * a look at the follower's consumer right after another client's
 * acknowledgement could say "nothing pending" without that message: an
 * instance then answered from a read model missing a write its client had
 * already seen acknowledged (a session just opened elsewhere: NO_SESSION).
 * The look asks the stream itself.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { connectNats, uniquePrefix } from "../support/nats.ts";

const ROUNDS = 2400;
const LANES = 8;

describe("a follower's caught-up look", () => {
  const connections: NatsConnection[] = [];
  afterEach(async () => {
    await Promise.all(connections.splice(0).map((nc) => nc.close()));
  });

  it("never says caught up without a message another connection saw acknowledged", async () => {
    const subjects = new Subjects(uniquePrefix());
    const [readerNc, writerNc] = await Promise.all([connectNats(), connectNats()]);
    connections.push(readerNc, writerNc);
    const options = { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 };
    const reader = await JetStreamEventLog.open(readerNc, options);
    const writer = await JetStreamEventLog.open(writerNc, options);
    const filter = `${subjects.prefix}.events.session.*`;
    let folded = 0;
    const following = await reader.follow(1, (m) => (folded = Math.max(folded, m.seq)), filter);
    try {
      let wrong = 0;
      // Lanes at once keep the server busy, as a loaded instance's would: the window is widest then.
      const lane = async (l: number): Promise<void> => {
        for (let i = 0; i < ROUNDS / LANES; i++) {
          // Another kind's message between them: the look must not count it as one of its filter's.
          await writer.append(`${subjects.prefix}.events.lock.l${l}-${i}`, new Uint8Array([1]), {
            expectedLastSubjectSeq: 0,
            msgId: `o${l}-${i}`,
          });
          const { seq } = await writer.append(`${subjects.prefix}.events.session.l${l}-${i}`, new Uint8Array([1]), {
            expectedLastSubjectSeq: 0,
            msgId: `s${l}-${i}`,
          });
          if ((await following.caughtUp(5000)) && folded < seq) wrong++;
        }
      };
      await Promise.all(Array.from({ length: LANES }, (_, l) => lane(l)));
      expect(wrong).toBe(0);
      // The look is not a constant "no": once the follower has the last message it says so.
      await expect.poll(() => following.caughtUp(5000), { timeout: 5000, interval: 10 }).toBe(true);
    } finally {
      await following.stop();
      await jetstreamManager(readerNc).then((jsm) => jsm.streams.delete(subjects.eventStream));
    }
  });
});
