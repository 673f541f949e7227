/**
 * An event is folded only into the entity its subject names: one whose
 * envelope names another id (or kind) is skipped, on the main thread's fold
 * and on the backlog worker's alike, its sequence still counted so that the
 * next append on that subject is not refused for ever; and it is reported.
 */
import { describe, expect, it } from "vitest";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { encodeEvent } from "../../src/events/envelope.ts";
import { type StoredMessage } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { BacklogFold } from "../../src/projections/backlog-fold.ts";
import { FoldStore, type ForeignEvent } from "../../src/projections/fold-store.ts";
import { recordsOf } from "../../src/projections/incremental-snapshots.ts";
import { type KindFold } from "../../src/projections/kind-fold.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import type { LockState } from "../../src/lock/state.ts";
import { DEFAULT_SETTINGS, T0 } from "../support/lock-given.ts";
import { LockWriter } from "../support/lock-writer.ts";

const subjects = new Subjects("t");
const fold = lockLogic(DEFAULT_SETTINGS) as unknown as KindFold<LockState>;
const REPLIES = { horizonMs: 60_000 };

async function messagesOf(log: MemoryEventLog): Promise<StoredMessage[]> {
  const out: StoredMessage[] = [];
  for await (const m of log.readStream()) out.push(m);
  return out;
}

describe("an event whose envelope names another entity than its subject", () => {
  it("is skipped and reported by the fold store and the backlog fold, its sequence counted", async () => {
    const log = new MemoryEventLog();
    const writer = new LockWriter(log, subjects);
    await writer.next("a");
    await writer.next("b");
    const [, ofB] = await messagesOf(log);
    // b's event, copied onto a's subject (a writer outside the contract; the service never writes one).
    const aSubject = subjects.event("lock", "a");
    await log.append(aSubject, ofB!.payload, { expectedLastSubjectSeq: await log.lastSubjectSeq(aSubject), msgId: "forged" });
    // And one that claims another kind.
    const hostEvent = {
      type: "HostStateSet",
      v: 1,
      at: new Date(T0).toISOString(),
      kind: "host",
      id: "a",
      data: { healthy: true, draining: false },
    } as const;
    await log.append(aSubject, encodeEvent(hostEvent), { expectedLastSubjectSeq: await log.lastSubjectSeq(aSubject), msgId: "forged-2" });
    const messages = await messagesOf(log);

    const onlyA = new FoldStore({ fold, replies: REPLIES, now: () => T0 });
    onlyA.foldStored(messages[0]!);

    const foreign: ForeignEvent[] = [];
    const store = new FoldStore({ fold, replies: REPLIES, now: () => T0, onForeign: (f) => foreign.push(f) });
    for (const m of messages) store.foldStored(m);
    expect(store.get("a")).toEqual(onlyA.get("a"));
    expect(store.record("a").seq).toBe(4);
    expect(foreign).toEqual([
      { seq: 3, id: "a", envelopeKind: "lock", envelopeId: "b" },
      { seq: 4, id: "a", envelopeKind: "host", envelopeId: "a" },
    ]);

    const backlog = new BacklogFold(fold, REPLIES, T0);
    const numbers = new Map<string, number>();
    for (const m of messages) {
      if (!numbers.has(m.subject)) numbers.set(m.subject, numbers.size);
      backlog.step(m, numbers.get(m.subject)!, 0);
    }
    const part = backlog.part();
    expect(backlog.foreign.count).toBe(2);
    expect(backlog.foreign.first).toEqual(foreign[0]);
    // Records are [id, state, seq, atMs]: a's is its own state at the foreign events' last sequence.
    const a = part.records.find(([id]) => id === "a");
    expect(a?.[2]).toBe(4);
    expect(part.records).toEqual(recordsOf(store.records, store.records.keys(), fold));
  });
});
