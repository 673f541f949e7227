/**
 * A request's message id carries its subject, op, fingerprint and requestId
 * in a header value: it never holds CR or LF, and each part reads back as it
 * went in, for any requestId (line breaks and `%` included).
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { baseMsgId, msgIdVariant, requestMsgId, requestOfMsgId, subjectOfMsgId } from "../../src/events/envelope.ts";

const requestIds = fc.oneof(
  fc.string({ unit: fc.constantFrom("\r", "\n", "%", "0", "A", "D", "|", "#", "a", " "), minLength: 1, maxLength: 12 }),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 128 }),
);
const fingerprints = fc.stringMatching(/^[0-9a-f]{16}$/);

describe("requestMsgId", () => {
  it("holds no line break, and its subject, fingerprint and requestId read back exactly", () => {
    fc.assert(
      fc.property(requestIds, fingerprints, fc.nat(5), (requestId, fingerprint, n) => {
        const msgId = requestMsgId("leasehold.events.lock.a~2Eb", "acquire", requestId, fingerprint);
        expect(msgId).not.toMatch(/[\r\n]/);
        expect(subjectOfMsgId(msgId)).toBe("leasehold.events.lock.a~2Eb");
        expect(requestOfMsgId(msgId)).toEqual({ requestId, fingerprint });
        expect(baseMsgId(msgIdVariant(msgId, n))).toBe(msgId);
      }),
    );
  });

  it("gives two requestIds two message ids", () => {
    fc.assert(
      fc.property(requestIds, requestIds, (a, b) => {
        fc.pre(a !== b);
        expect(requestMsgId("s", "op", a, "0123456789abcdef")).not.toBe(requestMsgId("s", "op", b, "0123456789abcdef"));
      }),
    );
  });

  it("is unchanged for a requestId without a line break", () => {
    expect(requestMsgId("s.t", "acquire", "a%0Ab|c", "0123456789abcdef")).toBe("s.t|acquire|0123456789abcdef|a%0Ab|c");
  });
});
