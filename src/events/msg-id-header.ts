/**
 * A stored message's `Nats-Msg-Id` read straight from its header bytes, for
 * whole-stream reads: the NATS client decodes a message's headers into a
 * map of arrays (a text decode, a split into lines, a key check per line)
 * to answer one `get`, which cost a start's reading thread more than a
 * tenth of its time on a stream whose every event owes a reply.
 *
 * Only a block shaped as the service writes it is read this way: the
 * version line, then `Nats-Msg-Id` as the first header with a value of
 * printable ASCII without spaces, then any headers of printable ASCII (the
 * expected-sequence header of an append). For such a block the client's
 * `headers.get("Nats-Msg-Id")` answers the same bytes as a string; any other
 * block (a status line, the id elsewhere, a space or another byte in it, a
 * line the client would refuse or skip) is left to the client (`undefined`
 * here).
 */
import type { JsMsg } from "@nats-io/jetstream";

const ascii = (s: string) => Uint8Array.from(s, (c) => c.charCodeAt(0));
/** What the block starts with: the version line and the header's name, as the client writes them. */
const HEAD = ascii("NATS/1.0\r\nNats-Msg-Id: ");
const CR = 0x0d;
const LF = 0x0a;
const COLON = 0x3a;
const SPACE = 0x20;
const TILDE = 0x7e;

/**
 * The value of `block`'s `Nats-Msg-Id` when it is the block's first header,
 * plain printable ASCII, and every other line a plain header; undefined
 * otherwise.
 */
export function plainMsgIdValue(block: Uint8Array): Uint8Array | undefined {
  const n = block.length;
  if (n < HEAD.length + 5) return undefined;
  for (let i = 0; i < HEAD.length; i++) if (block[i] !== HEAD[i]) return undefined;
  let i = HEAD.length;
  for (; i < n && block[i] !== CR; i++) {
    const b = block[i]!;
    if (b <= SPACE || b > TILDE) return undefined; // a space, a control or a non-ASCII byte: the client decides
  }
  const valueEnd = i;
  if (valueEnd === HEAD.length || block[i + 1] !== LF) return undefined;
  i += 2;
  // Further headers, `<name>:<value>\r\n` each (a name the client accepts, a value without CR or LF), then the block's end.
  while (i < n && block[i] !== CR) {
    const nameStart = i;
    for (; i < n && block[i] !== COLON; i++) if (block[i]! <= SPACE || block[i]! > TILDE) return undefined;
    if (i === nameStart || i === n) return undefined;
    for (i++; i < n && block[i] !== CR; i++) if (block[i]! < SPACE || block[i]! > TILDE) return undefined;
    if (block[i + 1] !== LF) return undefined;
    i += 2;
  }
  if (i !== n - 2 || block[i + 1] !== LF) return undefined;
  return block.subarray(HEAD.length, valueEnd);
}

/** What this file reads of a message the NATS client (v3) received: its raw bytes and where its headers end. */
interface RawClientMsg {
  readonly _rdata?: unknown;
  readonly _msg?: { readonly hdr?: unknown };
}

/**
 * The raw header block of `m` (without a copy), or undefined when it has
 * none or the client's message does not look as this file expects (another
 * client version): the caller then asks `m.headers`.
 */
export function rawHeaderBlock(m: JsMsg): Uint8Array | undefined {
  const raw = (m as unknown as { readonly msg?: RawClientMsg }).msg;
  const data = raw?._rdata;
  const hdr = raw?._msg?.hdr;
  if (!(data instanceof Uint8Array) || typeof hdr !== "number" || hdr <= 0 || hdr > data.length) return undefined;
  return data.subarray(0, hdr);
}
