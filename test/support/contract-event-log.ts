/**
 * The contract every {@link EventLog} keeps, as one suite run against each
 * implementation (in-memory and JetStream), so the simulations and the
 * service cannot rest on different semantics.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { WrongLastSequenceError, type EventLog, type StoredMessage } from "../../src/events/event-log.ts";

/** A log under test, with the subject prefix its stream covers (`<subjectPrefix>.>`). */
export interface LogUnderTest {
  readonly log: EventLog;
  readonly subjectPrefix: string;
  cleanup(): Promise<void>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const bytes = (s: string): Uint8Array => encoder.encode(s);
const text = (m: StoredMessage): string => decoder.decode(m.payload);

/** Registers the EventLog contract suite for one implementation. */
export function eventLogContract(name: string, makeLog: () => Promise<LogUnderTest>): void {
  describe(`EventLog contract: ${name}`, () => {
    let current: LogUnderTest | undefined;
    afterEach(async () => {
      await current?.cleanup();
      current = undefined;
    });

    async function setup(): Promise<{ log: EventLog; subject: (s: string) => string; prefix: string }> {
      current = await makeLog();
      const prefix = current.subjectPrefix;
      return { log: current.log, subject: (s) => `${prefix}.${s}`, prefix };
    }

    /** Appends `payload` to `subject` after whatever is there now, with a fresh message id. */
    async function put(log: EventLog, subject: string, payload: string, msgId = `${subject}|${payload}`): Promise<number> {
      const last = await log.lastSubjectSeq(subject);
      const ack = await log.append(subject, bytes(payload), { expectedLastSubjectSeq: last, msgId });
      expect(ack.duplicate).toBe(false);
      return ack.seq;
    }

    async function collect(iterable: AsyncIterable<StoredMessage>): Promise<StoredMessage[]> {
      const out: StoredMessage[] = [];
      for await (const m of iterable) out.push(m);
      return out;
    }

    it("starts empty", async () => {
      const { log, subject } = await setup();
      expect(await log.lastSeq()).toBe(0);
      expect(await log.lastSubjectSeq(subject("a"))).toBe(0);
      expect(await log.readSubject(subject("a"), 1)).toEqual([]);
      expect(await collect(log.readStream())).toEqual([]);
    });

    it("returns increasing stream sequences from append", async () => {
      const { log, subject } = await setup();
      const seqs: number[] = [];
      for (let i = 0; i < 5; i++) seqs.push(await put(log, subject(i % 2 === 0 ? "a" : "b"), `m${i}`));
      for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!);
      expect(await log.lastSeq()).toBe(seqs.at(-1));
    });

    it("accepts expected last subject sequence 0 on a fresh subject, and only there", async () => {
      const { log, subject } = await setup();
      const first = await log.append(subject("a"), bytes("one"), { expectedLastSubjectSeq: 0, msgId: "m1" });
      expect(first).toEqual({ seq: 1, duplicate: false });
      await expect(log.append(subject("a"), bytes("two"), { expectedLastSubjectSeq: 0, msgId: "m2" })).rejects.toBeInstanceOf(
        WrongLastSequenceError,
      );
    });

    it("refuses a wrong expected sequence with WrongLastSequenceError and stores nothing", async () => {
      const { log, subject } = await setup();
      const s1 = await put(log, subject("a"), "one");
      await put(log, subject("b"), "other");
      const before = await collect(log.readStream());

      for (const wrong of [0, s1 + 1, s1 + 100]) {
        const attempt = log.append(subject("a"), bytes("stale"), { expectedLastSubjectSeq: wrong, msgId: `stale-${wrong}` });
        const error = await attempt.then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(WrongLastSequenceError);
        expect((error as WrongLastSequenceError).subject).toBe(subject("a"));
        expect((error as WrongLastSequenceError).expected).toBe(wrong);
      }

      expect(await collect(log.readStream())).toEqual(before);
      expect(await log.lastSubjectSeq(subject("a"))).toBe(s1);
      // The refused message ids were not remembered: the same id may be stored once the sequence is right.
      const ok = await log.append(subject("a"), bytes("fresh"), { expectedLastSubjectSeq: s1, msgId: "stale-0" });
      expect(ok.duplicate).toBe(false);
      expect(ok.seq).toBeGreaterThan(s1);
    });

    it("stores a repeated message id once and answers the repeat with the original sequence", async () => {
      const { log, subject } = await setup();
      const first = await log.append(subject("a"), bytes("one"), { expectedLastSubjectSeq: 0, msgId: "dup" });
      await put(log, subject("b"), "other");
      const before = await collect(log.readStream());

      // A retry of the same append (same expected sequence, now stale) is a duplicate, not a conflict.
      const retry = await log.append(subject("a"), bytes("one"), { expectedLastSubjectSeq: 0, msgId: "dup" });
      expect(retry).toEqual({ seq: first.seq, duplicate: true });
      // The id is stream-wide: reusing it with a current sequence stores nothing either.
      const reused = await log.append(subject("a"), bytes("changed"), { expectedLastSubjectSeq: first.seq, msgId: "dup" });
      expect(reused).toEqual({ seq: first.seq, duplicate: true });

      expect(await collect(log.readStream())).toEqual(before);
      expect(await log.lastSubjectSeq(subject("a"))).toBe(first.seq);
    });

    it("keeps the expected sequence per subject", async () => {
      const { log, subject } = await setup();
      const a1 = await log.append(subject("a"), bytes("a1"), { expectedLastSubjectSeq: 0, msgId: "a1" });
      const b1 = await log.append(subject("b"), bytes("b1"), { expectedLastSubjectSeq: 0, msgId: "b1" });
      const a2 = await log.append(subject("a"), bytes("a2"), { expectedLastSubjectSeq: a1.seq, msgId: "a2" });
      // b's last is b1 even though the stream moved on past it.
      const b2 = await log.append(subject("b"), bytes("b2"), { expectedLastSubjectSeq: b1.seq, msgId: "b2" });
      expect([a1.seq, b1.seq, a2.seq, b2.seq]).toEqual([1, 2, 3, 4]);
      await expect(log.append(subject("b"), bytes("b3"), { expectedLastSubjectSeq: a2.seq, msgId: "b3" })).rejects.toBeInstanceOf(
        WrongLastSequenceError,
      );
    });

    it("reads one subject's messages from a sequence, in order, with their message ids", async () => {
      const { log, subject } = await setup();
      const onA: number[] = [];
      for (let i = 0; i < 6; i++) {
        const s = i % 2 === 0 ? subject("a") : subject("a.deeper");
        const seq = await put(log, s, `m${i}`, `id-${i}`);
        if (i % 2 === 0) onA.push(seq);
      }
      await put(log, subject("b"), "b");

      const all = await log.readSubject(subject("a"), 1);
      expect(all.map((m) => m.seq)).toEqual(onA);
      expect(all.map(text)).toEqual(["m0", "m2", "m4"]);
      expect(all.map((m) => m.msgId)).toEqual(["id-0", "id-2", "id-4"]);
      expect(all.every((m) => m.subject === subject("a"))).toBe(true);

      expect((await log.readSubject(subject("a"), onA[1]!)).map((m) => m.seq)).toEqual(onA.slice(1));
      expect((await log.readSubject(subject("a"), onA[1]! + 1)).map((m) => m.seq)).toEqual(onA.slice(2));
      expect(await log.readSubject(subject("a"), onA[2]! + 1)).toEqual([]);
      expect(await log.readSubject(subject("never"), 1)).toEqual([]);
    });

    it("reports the last sequence of each subject", async () => {
      const { log, subject } = await setup();
      expect(await log.lastSubjectSeq(subject("a"))).toBe(0);
      const a1 = await put(log, subject("a"), "a1");
      const b1 = await put(log, subject("b"), "b1");
      expect(await log.lastSubjectSeq(subject("a"))).toBe(a1);
      expect(await log.lastSubjectSeq(subject("b"))).toBe(b1);
      const a2 = await put(log, subject("a"), "a2");
      expect(await log.lastSubjectSeq(subject("a"))).toBe(a2);
      expect(await log.lastSubjectSeq(subject("b"))).toBe(b1);
      expect(await log.lastSubjectSeq(subject("c"))).toBe(0);
    });

    it("reads the stream within fromSeq / toSeq / filter bounds", async () => {
      const { log, subject, prefix } = await setup();
      const written: { seq: number; subject: string; payload: string }[] = [];
      for (let i = 0; i < 8; i++) {
        const s = subject(["x.one", "x.two", "y.one"][i % 3]!);
        written.push({ seq: await put(log, s, `p${i}`), subject: s, payload: `p${i}` });
      }
      const view = (ms: StoredMessage[]) => ms.map((m) => ({ seq: m.seq, subject: m.subject, payload: text(m) }));

      expect(view(await collect(log.readStream()))).toEqual(written);
      expect(view(await collect(log.readStream({})))).toEqual(written);
      expect(view(await collect(log.readStream({ fromSeq: 3 })))).toEqual(written.filter((w) => w.seq >= 3));
      expect(view(await collect(log.readStream({ toSeq: 5 })))).toEqual(written.filter((w) => w.seq <= 5));
      expect(view(await collect(log.readStream({ fromSeq: 2, toSeq: 6 })))).toEqual(written.filter((w) => w.seq >= 2 && w.seq <= 6));
      expect(view(await collect(log.readStream({ fromSeq: 4, toSeq: 4 })))).toEqual(written.filter((w) => w.seq === 4));
      expect(await collect(log.readStream({ fromSeq: 9 }))).toEqual([]);
      expect(await collect(log.readStream({ fromSeq: 6, toSeq: 5 }))).toEqual([]);

      expect(view(await collect(log.readStream({ filter: subject("x.one") })))).toEqual(
        written.filter((w) => w.subject === subject("x.one")),
      );
      expect(view(await collect(log.readStream({ filter: subject("x.*") })))).toEqual(
        written.filter((w) => w.subject.startsWith(subject("x."))),
      );
      expect(view(await collect(log.readStream({ filter: subject("*.one") })))).toEqual(written.filter((w) => w.subject.endsWith(".one")));
      expect(view(await collect(log.readStream({ filter: `${prefix}.>` })))).toEqual(written);
      expect(view(await collect(log.readStream({ filter: subject("y.one"), fromSeq: 4, toSeq: 8 })))).toEqual(
        written.filter((w) => w.subject === subject("y.one") && w.seq >= 4 && w.seq <= 8),
      );
      expect(await collect(log.readStream({ filter: subject("nothing.here") }))).toEqual([]);
      expect(await collect(log.readStream({ filter: subject("y.one"), fromSeq: 7 }))).toEqual([]);
    });

    it("reads the stream up to an instant (toTime)", async () => {
      const { log, subject } = await setup();
      const before = Date.now();
      for (let i = 0; i < 6; i++) await put(log, subject("t"), `p${i}`);
      const after = Date.now();
      const all = await collect(log.readStream());
      const times = all.map((m) => m.time);
      for (let i = 1; i < times.length; i++) expect(times[i]!).toBeGreaterThanOrEqual(times[i - 1]!);
      // Store times come from the log's own clock; allow a little skew against ours.
      expect(times[0]!).toBeGreaterThanOrEqual(before - 1000);
      expect(times.at(-1)!).toBeLessThanOrEqual(after + 1000);

      for (const cut of [times[0]!, times[2]!, times.at(-1)!, times[0]! - 1]) {
        const got = await collect(log.readStream({ toTime: cut }));
        expect(got.map((m) => m.seq)).toEqual(all.filter((m) => m.time <= cut).map((m) => m.seq));
      }
    });

    it("follows from a sequence: existing messages first, then new ones, until stopped", async () => {
      const { log, subject } = await setup();
      await put(log, subject("f"), "m1");
      await put(log, subject("f"), "m2");
      await put(log, subject("f"), "m3");

      const seen: StoredMessage[] = [];
      const following = await log.follow(2, (m) => seen.push(m));
      try {
        await vi.waitFor(() => expect(seen.map((m) => m.seq)).toEqual([2, 3]), { timeout: 5000, interval: 10 });
        await put(log, subject("g"), "m4");
        await put(log, subject("f"), "m5");
        await vi.waitFor(() => expect(seen.map((m) => m.seq)).toEqual([2, 3, 4, 5]), { timeout: 5000, interval: 10 });
        expect(seen.map(text)).toEqual(["m2", "m3", "m4", "m5"]);
        expect(seen.map((m) => m.subject)).toEqual([subject("f"), subject("f"), subject("g"), subject("f")]);
      } finally {
        await following.stop();
      }

      // A second follower proves the next message was delivered; the stopped one must not see it.
      const witness: number[] = [];
      const second = await log.follow(6, (m) => witness.push(m.seq));
      try {
        await put(log, subject("f"), "m6");
        await vi.waitFor(() => expect(witness).toEqual([6]), { timeout: 5000, interval: 10 });
      } finally {
        await second.stop();
      }
      expect(seen.map((m) => m.seq)).toEqual([2, 3, 4, 5]);
    });

    it("follows only the subjects a filter names", async () => {
      const { log, subject } = await setup();
      await put(log, subject("a.one"), "a1");
      await put(log, subject("b.one"), "b1");
      const seen: number[] = [];
      const all: number[] = [];
      const following = await log.follow(1, (m) => seen.push(m.seq), subject("a.*"));
      const everything = await log.follow(1, (m) => all.push(m.seq));
      try {
        await put(log, subject("b.two"), "b2");
        await put(log, subject("a.two"), "a2");
        await vi.waitFor(() => expect(all).toEqual([1, 2, 3, 4]), { timeout: 5000, interval: 10 });
        await vi.waitFor(() => expect(seen).toEqual([1, 4]), { timeout: 5000, interval: 10 });
      } finally {
        await following.stop();
        await everything.stop();
      }
    });

    it("says a follower is caught up once it got every message of its filter", async () => {
      const { log, subject } = await setup();
      await put(log, subject("a.one"), "a1");
      await put(log, subject("b.one"), "b1");
      const seen: number[] = [];
      const following = await log.follow(1, (m) => seen.push(m.seq), subject("a.*"));
      try {
        await put(log, subject("a.two"), "a2");
        await put(log, subject("b.two"), "b2");
        await vi.waitFor(() => expect(seen).toEqual([1, 3]), { timeout: 5000, interval: 10 });
        // Messages of other subjects stored after its last one do not keep it behind.
        await vi.waitFor(async () => expect(await following.caughtUp(5000)).toBe(true), { timeout: 5000, interval: 10 });
      } finally {
        await following.stop();
      }
    });

    it("reports the last sequence of the whole stream", async () => {
      const { log, subject } = await setup();
      expect(await log.lastSeq()).toBe(0);
      await put(log, subject("a"), "1");
      expect(await log.lastSeq()).toBe(1);
      await put(log, subject("b"), "2");
      await put(log, subject("a"), "3");
      expect(await log.lastSeq()).toBe(3);
      // Neither a refused append nor a duplicate moves it.
      await expect(log.append(subject("a"), bytes("x"), { expectedLastSubjectSeq: 1, msgId: "x" })).rejects.toBeInstanceOf(
        WrongLastSequenceError,
      );
      await log.append(subject("c"), bytes("3"), { expectedLastSubjectSeq: 0, msgId: `${subject("a")}|3` });
      expect(await log.lastSeq()).toBe(3);
    });
  });
}
