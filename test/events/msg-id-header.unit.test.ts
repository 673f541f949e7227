/**
 * The message id read straight from a header block (src/events/msg-id-header.ts)
 * against the NATS client's own decode: wherever the short read answers, it
 * answers what `headers.get("Nats-Msg-Id")` does; any other block is left to
 * the client.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { headers, MsgHdrsImpl } from "@nats-io/nats-core";
import { plainMsgIdValue } from "../../src/events/msg-id-header.ts";

const latin1 = (bytes: Uint8Array) => Buffer.from(bytes).toString("latin1");
const block = (text: string) => new TextEncoder().encode(text);
/** The client's answer for a block. */
const clientMsgId = (bytes: Uint8Array): string | undefined => {
  try {
    return MsgHdrsImpl.decode(bytes).get("Nats-Msg-Id") || undefined;
  } catch {
    return undefined;
  }
};

describe("plainMsgIdValue", () => {
  it("reads the block the service writes as the client does, with or without the expected-sequence header", () => {
    for (const expected of [undefined, "17"]) {
      const h = headers();
      h.set("Nats-Msg-Id", "t.events.lock.a|acquire|0123456789abcdef|req-1");
      if (expected !== undefined) h.set("Nats-Expected-Last-Subject-Sequence", expected);
      const bytes = (h as MsgHdrsImpl).encode();
      const value = plainMsgIdValue(bytes);
      expect(value).toBeDefined();
      expect(latin1(value!)).toBe("t.events.lock.a|acquire|0123456789abcdef|req-1");
      expect(latin1(value!)).toBe(clientMsgId(bytes));
    }
  });

  it("leaves to the client a block with the id not first, a status, spaces, bytes beyond printable ASCII or a line it skips", () => {
    for (const text of [
      "NATS/1.0\r\nOther: b\r\nNats-Msg-Id: a\r\n\r\n",
      "NATS/1.0\r\nNats-Msg-Id: a\r\nno colon\r\n\r\n",
      "NATS/1.0\r\nNats-Msg-Id: a\r\nBad Name: b\r\n\r\n",
      "NATS/1.0\r\nNats-Msg-Id: a\r\nOther: b\nc\r\n\r\n",
      "NATS/1.0\r\nNats-Msg-Id: a\r\n\r\nOther: b\r\n\r\n",
      "NATS/1.0 100 Idle\r\nNats-Msg-Id: a\r\n\r\n",
      "NATS/1.0\r\nNats-Msg-Id: a b\r\n\r\n",
      "NATS/1.0\r\nNats-Msg-Id:  a\r\n\r\n",
      "NATS/1.0\r\nNats-Msg-Id: \r\n\r\n",
      "NATS/1.0\r\nnats-msg-id: a\r\n\r\n",
      "NATS/1.0\r\nNats-Msg-Id: é\r\n\r\n",
      "NATS/1.0\r\nNats-Msg-Id: a\r\n",
      "",
    ])
      expect(plainMsgIdValue(block(text)), JSON.stringify(text)).toBeUndefined();
  });

  it("answers what the client answers for any block it reads", () => {
    const idChar = fc.constantFrom(..."ab|#.-_:\r\n \t\u00e9\u0000A9".split(""));
    const line = fc.string({ unit: idChar }).map((l) => `${l}\r\n`);
    const text = fc.oneof(
      fc.string({ unit: idChar }).map((id) => `NATS/1.0\r\nNats-Msg-Id: ${id}\r\n\r\n`),
      fc
        .tuple(fc.string({ unit: idChar }), fc.array(line, { maxLength: 3 }))
        .map(([id, lines]) => `NATS/1.0\r\nNats-Msg-Id: ${id}\r\n${lines.join("")}\r\n`),
      fc
        .tuple(fc.string({ unit: idChar }), fc.string({ unit: idChar }))
        .map(([id, more]) => `NATS/1.0\r\nNats-Msg-Id: ${id}${more}\r\n\r\n`),
      fc.string(),
    );
    let read = 0;
    fc.assert(
      fc.property(text, (t) => {
        const bytes = block(t);
        const value = plainMsgIdValue(bytes);
        if (value === undefined) return;
        read++;
        expect(latin1(value)).toBe(clientMsgId(bytes));
      }),
      { numRuns: 2000 },
    );
    expect(read).toBeGreaterThan(50); // the short read was held to the client, not only skipped
  });
});
