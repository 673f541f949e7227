/**
 * A batch packed for a worker (src/threads/message-batches.ts) unpacks to
 * the messages it was packed from: payloads, sequences, subjects, and the
 * message id where it was asked for, whether the message gave its bytes or
 * only the string.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { StoredMessage } from "../../src/events/event-log.ts";
import { BatchPacker, BatchUnpacker } from "../../src/threads/message-batches.ts";

const ascii = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));

describe("message batches", () => {
  it("unpack what was packed, with the message ids asked for", () => {
    const message = fc.record({
      subject: fc.constantFrom("t.events.lock.a", "t.events.lock.b", "t.events.lock.c"),
      payload: fc.uint8Array({ maxLength: 40 }),
      msgId: fc.option(fc.stringMatching(/^[!-~]{1,20}$/), { nil: undefined }),
      asBytes: fc.boolean(),
      asked: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(message, { maxLength: 30 }), fc.integer({ min: 1, max: 4 }), (specs, maxSubjects) => {
        const packer = new BatchPacker(maxSubjects, 16);
        const unpacker = new BatchUnpacker();
        const out: StoredMessage[] = [];
        const flush = () => unpacker.unpack(packer.take().batch, (m) => out.push({ ...m, payload: m.payload.slice() }));
        specs.forEach((s, i) => {
          const m: StoredMessage = {
            seq: i + 1,
            subject: s.subject,
            payload: s.payload,
            time: 1000 + i,
            pending: specs.length - i - 1,
            msgId: s.msgId,
            ...(s.asBytes && s.msgId !== undefined ? { msgIdBytes: () => ascii(s.msgId!) } : {}),
          };
          packer.add(m, s.asked);
          if (i % 7 === 6) flush();
        });
        if (packer.count > 0) flush();
        expect(out).toEqual(
          specs.map((s, i) => ({
            seq: i + 1,
            subject: s.subject,
            payload: s.payload,
            time: 1000 + i,
            pending: specs.length - i - 1,
            msgId: s.asked ? s.msgId : undefined,
          })),
        );
      }),
    );
  });
});
