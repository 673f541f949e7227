/**
 * The strict header-block reader (src/transport/client-text.ts) and the
 * principal read from it (src/transport/principals.ts): a block is read whole
 * or refused whole, nothing throws, and a principal is read only from the one
 * copy of `Nats-Request-Info` the server wrote.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { headerValues, parseHeaderBlock } from "../../src/transport/client-text.ts";
import { principalOf } from "../../src/transport/principals.ts";

const SERVER_COPY = `Nats-Request-Info: ${JSON.stringify({ acc: "bob", user: "bob" })}`;
const block = (...lines: string[]) => `NATS/1.0\r\n${lines.map((l) => `${l}\r\n`).join("")}\r\n`;

describe("a header block", () => {
  it("reads well-formed lines in order, names exactly as written", () => {
    const read = parseHeaderBlock(block("Leasehold-Reply-To: _INBOX.x", "X-A:  spaced  ", "x-a: lower"));
    expect(read).toEqual({
      lines: [
        ["Leasehold-Reply-To", "_INBOX.x"],
        ["X-A", "spaced"],
        ["x-a", "lower"],
      ],
      text: expect.any(String),
    });
    expect(headerValues(read as never, "X-A")).toEqual(["spaced"]);
  });

  it.each([
    ["a name with a space", block("Bad Key: x")],
    ["a line without a colon", block("no colon")],
    ["an empty name", block(": x")],
    ["no blank line at its end", "NATS/1.0\r\nX-A: 1\r\n"],
    ["another version", block("X-A: 1").replace("NATS/1.0", "HTTP/1.1")],
    ["a bare line feed in a value", block("X-A: 1\nX-B: 2")],
  ])("is refused whole with %s", (_label, text) => {
    expect(parseHeaderBlock(text)).toEqual({ unread: "malformed" });
  });

  it("never throws, whatever the text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (tail) => {
        const read = parseHeaderBlock(`NATS/1.0\r\n${tail}`);
        expect("unread" in read || read.lines.every(([name]) => /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name))).toBe(true);
      }),
    );
  });
});

describe("the principal of a request", () => {
  const read = (text: string) => principalOf(parseHeaderBlock(text), "nats-request-info");

  it("is the server's copy, alone in the block", () => {
    expect(read(block("X-A: 1", SERVER_COPY))).toBe("bob/bob");
    expect(read(block(`Nats-Request-Info: ${JSON.stringify({ acc: "bob" })}`))).toBe("bob");
  });

  it.each([
    ["another copy in another letter case", block(`nats-request-info: {"acc":"ops","user":"ops"}`, SERVER_COPY)],
    [
      "the server's copy run into a value (the block's last line left off)",
      block(`nats-request-info: {"acc":"ops","user":"ops"}`, `X-Pad: a${SERVER_COPY}`),
    ],
    ["two copies", block(`Nats-Request-Info: {"acc":"ops","user":"ops"}`, SERVER_COPY)],
    ["a malformed block", block("Bad Key: x", SERVER_COPY)],
    ["a copy that is not JSON", block("Nats-Request-Info: ops")],
  ])("is no one with %s", (_label, text) => {
    expect(read(text)).toBe("");
  });

  it("is no one when the deployment does not say the server writes it", () => {
    expect(principalOf(parseHeaderBlock(block(SERVER_COPY)), "off")).toBe("");
  });
});
