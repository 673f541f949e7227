import { headers } from "@nats-io/nats-core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { appendHeaders } from "../../src/events/jetstream-event-log.ts";

/** What nats.js's own headers encode for an append's two headers. */
function natsEncoded(msgId: string, seq: number): Uint8Array {
  const h = headers();
  h.set("Nats-Msg-Id", msgId);
  h.set("Nats-Expected-Last-Subject-Sequence", String(seq));
  // nats.js's publish encodes its headers through this method of its own class.
  return (h as unknown as { encode(): Uint8Array }).encode();
}

describe("appendHeaders", () => {
  it("encodes the same bytes as nats.js's headers for any message id and sequence", () => {
    const msgId = fc.oneof(
      fc.string({ unit: "grapheme", maxLength: 200 }),
      fc.string({ unit: fc.constantFrom(" ", "\t", "|", "a", "\uFEFF", "é", "😀"), maxLength: 20 }),
    );
    fc.assert(
      fc.property(msgId, fc.nat({ max: Number.MAX_SAFE_INTEGER }), (id, seq) => {
        fc.pre(!/[\r\n]/.test(id));
        expect(appendHeaders(id, seq).encode()).toEqual(natsEncoded(id, seq));
      }),
      { numRuns: 2000 },
    );
  });

  it("refuses a line break in the message id, as nats.js does", () => {
    for (const id of ["a\r\nNats-Expected-Last-Subject-Sequence: 0", "a\nb", "a\rb"]) {
      expect(() => natsEncoded(id, 1)).toThrow();
      expect(() => appendHeaders(id, 1)).toThrow(/cannot contain/);
    }
  });
});
