/**
 * The read model's catch-up with the stream: concurrent callers of fresh()
 * share looks at the stream, but none is answered by a look that started
 * before it called (that look may miss a write acknowledged just before).
 */
import { describe, expect, it } from "vitest";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { ProxyReadModel } from "../../src/proxy/read-model.ts";
import { proxyLogic } from "../../src/proxy/logic.ts";
import { projectionOf, withCaughtUp } from "../support/projections.ts";

/**
 * A log whose lastSubjectSeq answers only when the test says so, and whose
 * followers never claim to be caught up (so every freshness check looks at the stream).
 */
class SlowLookLog extends MemoryEventLog {
  readonly looks: (() => void)[] = [];
  override lastSubjectSeq(subject: string): Promise<number> {
    return new Promise((resolve) => this.looks.push(() => void super.lastSubjectSeq(subject).then(resolve)));
  }
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("ProxyReadModel.fresh", () => {
  it("queues one shared look behind the one in flight, and answers late callers only from it", async () => {
    const log = new SlowLookLog();
    const neverCaughtUp = withCaughtUp(log, () => Promise.resolve(false));
    const model = new ProxyReadModel(projectionOf(neverCaughtUp, new Subjects("t"), proxyLogic({ cooldownMs: 1000 })), {
      retentionMs: 1000,
      dedupWindowMs: 1000,
    });
    const starting = model.start();
    await settle();
    log.looks.shift()!(); // the start's own look at the stream
    await starting;
    const done: string[] = [];
    const first = model.fresh().then(() => done.push("first"));
    const second = model.fresh().then(() => done.push("second"));
    const third = model.fresh().then(() => done.push("third"));
    await settle();
    expect(log.looks).toHaveLength(1);
    log.looks[0]!();
    await first;
    await settle();
    // The second and third called while the first look was in flight: they wait for a look of their own.
    expect(done).toEqual(["first"]);
    expect(log.looks).toHaveLength(2);
    log.looks[1]!();
    await Promise.all([second, third]);
    expect(done).toEqual(["first", "second", "third"]);
    await model.stop();
  });
});
