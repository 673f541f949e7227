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
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { type StoredMessage } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { pino } from "pino";
import { BacklogFold } from "../../src/projections/backlog-fold.ts";
import { FoldStore } from "../../src/projections/fold-store.ts";
import { KindProjection } from "../../src/projections/kind-projection.ts";
import { MemoryProjectionSnapshotStore } from "../../src/projections/snapshot-stores.ts";
import { ProxyReadModel } from "../../src/proxy/read-model.ts";
import { readSnapshot } from "../../src/projections/projection-snapshots.ts";
import { recordsOf } from "../../src/projections/incremental-snapshots.ts";
import { type KindFold } from "../../src/projections/kind-fold.ts";
import { type ProxyState } from "../../src/proxy/state.ts";
import { proxyLogic } from "../../src/proxy/logic.ts";
import { startSimService } from "../tools/support/sim-service.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import type { LockState } from "../../src/lock/state.ts";
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

  it("builds the proxies' recent acquisitions as their read model saves them", async () => {
    const sim = await startSimService({ cooldownMs: 20_000 });
    for (const proxy of ["p1", "p2"]) await sim.call("proxy.register", { proxy, maxLeases: 3, latencyMs: 1, labels: {}, healthy: true });
    for (let i = 0; i < 8; i++) {
      const r = await sim.call("proxy.acquire", {
        ttlMs: 5000,
        target: `t${i % 3}`,
        labels: {},
        ...(i % 4 === 3 ? {} : { requestId: `r${i % 5}` }),
      });
      if (r.ok && i % 2 === 0) await sim.call("proxy.release", { leaseId: (r.reply as { lease: { id: string } }).lease.id });
      sim.clock.advance(700);
    }
    await sim.stop();
    const proxyFold = proxyLogic({ cooldownMs: 20_000 }) as unknown as KindFold<ProxyState>;
    const subjectsOfSim = new Subjects(sim.config.prefix);
    const messages = sim.log.messages.filter((m) => m.subject.startsWith(subjectsOfSim.eventsOfKind("proxy").slice(0, -1)));
    expect(messages.length).toBeGreaterThan(8);

    const backlog = new BacklogFold(proxyFold, {}, sim.clock.now());
    const numbers = new Map<string, number>();
    for (const m of messages) {
      if (!numbers.has(m.subject)) numbers.set(m.subject, numbers.size);
      backlog.step(m, numbers.get(m.subject)!, 0);
    }

    // The read model on this thread, its extras as a snapshot keeps them.
    const store = new MemoryProjectionSnapshotStore();
    const projection = new KindProjection({
      ...{
        log: sim.log,
        filter: subjectsOfSim.eventsOfKind("proxy"),
        fold: proxyFold,
        logger: pino({ level: "silent" }),
        snapshots: store,
      },
      now: () => sim.clock.now(),
    });
    new ProxyReadModel(projection, { retentionMs: 20_000, dedupWindowMs: 120_000 });
    await projection.start();
    await projection.saveSnapshot();
    const saved = await readSnapshot(store, "proxy", proxyFold.foldVersion);
    if (saved === undefined || typeof saved === "string") throw new Error(`no snapshot: ${saved}`);
    const acquisitions = saved.parts.at(-1)!.extras.acquisitions as unknown[];
    expect(acquisitions.length).toBeGreaterThan(0);
    expect(backlog.part().extras).toEqual({ acquisitions });
    await projection.stop();
  });
});
