/**
 * The backlog worker's fold without its thread (src/projections/backlog-fold.ts):
 * records kept in an array by slot, one slot per id, whatever the batches'
 * subject numbering does. Held to the projection's fold store for any
 * history: unparsable messages, a subject leasehold does not write, a
 * second subject whose last token names an id already seen, and a
 * numbering that starts again at any point.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MemoryEventLog, type StoredMessage } from "../../src/events/index.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { BacklogFold, FoldStore, recordsOf, type KindFold } from "../../src/projections/index.ts";
import { lockLogic } from "../../src/logic/lock/logic.ts";
import type { LockState } from "../../src/projections/lock.ts";
import { DEFAULT_SETTINGS, T0 } from "../support/lock-given.ts";
import { LockWriter } from "../support/lock-writer.ts";

const subjects = new Subjects("t");
const fold = lockLogic(DEFAULT_SETTINGS) as unknown as KindFold<LockState>;
const NAMES = ["a", "b", "c", "d"];
const REPLIES = { horizonMs: 60_000, keepLatest: 3 };

/** One message of the history: the next event of a lock, or a message that is not one of its events. */
const op = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant("event" as const), name: fc.constantFrom(...NAMES) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("garbage" as const), name: fc.constantFrom(...NAMES) }) },
  // The same id under another prefix: the last token is what names the id.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("alias" as const), name: fc.constantFrom(...NAMES) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("foreign" as const), name: fc.constant("not a token") }) },
);

async function history(ops: readonly { kind: string; name: string }[]): Promise<StoredMessage[]> {
  const log = new MemoryEventLog();
  const writer = new LockWriter(log, subjects);
  for (const { kind, name } of ops) {
    if (kind === "event") await writer.next(name);
    else {
      const subject = kind === "garbage" ? subjects.event("lock", name) : kind === "alias" ? `t.old.lock.${name}` : "t.events.lock.a b";
      const last = await log.lastSubjectSeq(subject);
      await log.append(subject, new TextEncoder().encode(`{"not":"an event"`), {
        expectedLastSubjectSeq: last,
        msgId: `${subject}-${last}`,
      });
    }
  }
  const messages: StoredMessage[] = [];
  for await (const m of log.readStream()) messages.push(m);
  return messages;
}

describe("the backlog fold", () => {
  it("equals the fold store's fold for any history and any numbering of its subjects", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(op, { minLength: 1, maxLength: 50 }),
        fc.array(fc.nat({ max: 60 }), { maxLength: 4 }),
        async (ops, restarts) => {
          const messages = await history(ops);
          const nowMs = T0 + 30_000;

          const store = new FoldStore({ fold, replies: REPLIES, now: () => nowMs });
          for (const m of messages) store.foldStored(m);

          // Subjects numbered as the main thread numbers them, starting again before each index in `restarts`.
          const backlog = new BacklogFold(fold, REPLIES, nowMs);
          let numbered = new Map<string, number>();
          let numbering = 0;
          messages.forEach((m, i) => {
            if (restarts.includes(i)) [numbered, numbering] = [new Map(), numbering + 1];
            let subject = numbered.get(m.subject);
            if (subject === undefined) numbered.set(m.subject, (subject = numbered.size));
            backlog.step(m, subject, numbering);
          });
          const part = backlog.part();

          expect(part.seq).toBe(messages.at(-1)!.seq);
          expect(part.records).toEqual(recordsOf(store.records, store.records.keys(), fold));
          expect(part.replies).toEqual(store.replies.latest(store.replies.size.entries));
        },
      ),
      { numRuns: 200 },
    );
  });
});
