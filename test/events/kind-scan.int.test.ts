/**
 * A read of one kind's backlog gives the same messages whether the server
 * filters it or this process does (src/events/scan-plan.ts): the scan of a
 * kind that holds most of the range reads the whole stream and keeps the
 * kind's messages, with the pending counts a filtered read would give; the
 * scan of a rare kind stays filtered by the server.
 */
import { afterEach, describe, expect, inject, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/nats-core";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { planScan } from "../../src/events/scan-plan.ts";
import type { StoredMessage } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { uniquePrefix } from "../support/nats.ts";

let nc: NatsConnection | undefined;
afterEach(async () => {
  await nc?.close();
  nc = undefined;
});

describe("scanning one kind's backlog", () => {
  it("reads a dense kind unfiltered and a rare one filtered, each giving exactly the kind's messages", async () => {
    nc = await connect({ servers: inject("natsUrl") });
    const subjects = new Subjects(uniquePrefix());
    const log = await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
    // 300 lock events on 30 names, 10 proxy events, interleaved; a session event at the end.
    const expected: { lock: number[]; proxy: number[] } = { lock: [], proxy: [] };
    const lastOf = new Map<string, number>();
    const append = async (subject: string) => {
      const r = await log.append(subject, new TextEncoder().encode("{}"), {
        msgId: `m${lastOf.size}-${Math.random()}`,
        expectedLastSubjectSeq: lastOf.get(subject) ?? 0,
      });
      lastOf.set(subject, r.seq);
      return r.seq;
    };
    for (let i = 0; i < 300; i++) {
      expected.lock.push(await append(subjects.event("lock", `job${i % 30}`)));
      if (i % 30 === 0) expected.proxy.push(await append(subjects.event("proxy", `p${i}`)));
    }
    await append(subjects.event("session", "s1"));
    const last = await log.lastSeq();

    const source = { jsm: await jetstreamManager(nc), stream: subjects.eventStream, streamSubjects: subjects.allEvents, timeoutMs: 5000 };
    const lockPlan = await planScan(source, subjects.eventsOfKind("lock"), 5, last);
    const proxyPlan = await planScan(source, subjects.eventsOfKind("proxy"), 5, last);
    expect("keep" in lockPlan && lockPlan.filter).toBe(subjects.allEvents);
    expect("keep" in proxyPlan).toBe(false);

    const scan = async (kind: "lock" | "proxy", fromSeq: number, toSeq: number) => {
      const seen: StoredMessage[] = [];
      await log.scan({ fromSeq, toSeq, filter: subjects.eventsOfKind(kind) }, (m) => void seen.push(m), 5000);
      return seen;
    };
    for (const kind of ["lock", "proxy"] as const) {
      const from = expected[kind][3]!;
      const to = expected[kind].at(-2)!;
      const seen = await scan(kind, from, to);
      const want = expected[kind].filter((s) => s >= from && s <= to);
      expect(seen.map((m) => m.seq)).toEqual(want);
      expect(seen.every((m) => m.subject.startsWith(`${subjects.prefix}.events.${kind}.`))).toBe(true);
      // As a filtered read says: the kind's messages after this one, to the stream's end.
      const after = expected[kind].filter((s) => s >= from).length;
      expect(seen.map((m) => m.pending)).toEqual(want.map((_, i) => after - i - 1));
    }
  });
});
