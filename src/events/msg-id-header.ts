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
  const end = plainValueEnd(block, block.length);
  return end < 0 ? undefined : block.subarray(HEAD.length, end);
}

/**
 * {@link plainMsgIdValue} of `m`'s raw header block, read in place (one view
 * made, of the value alone); undefined when the block is not plain, or the
 * client's message does not look as this file expects (another client
 * version): the caller then asks `m.headers`.
 */
export function plainMsgIdOf(m: JsMsg): Uint8Array | undefined {
  const raw = (m as unknown as { readonly msg?: RawClientMsg }).msg;
  const data = raw?._rdata;
  const hdr = raw?._msg?.hdr;
  if (!(data instanceof Uint8Array) || typeof hdr !== "number" || hdr <= 0 || hdr > data.length) return undefined;
  const end = plainValueEnd(data, hdr);
  // A plain view, not the client's Buffer's subarray (which builds a Buffer through its species).
  return end < 0 ? undefined : new Uint8Array(data.buffer, data.byteOffset + HEAD.length, end - HEAD.length);
}

/** Where the plain `Nats-Msg-Id` value of the block `data[0 .. n]` ends (it starts at HEAD's length); -1 when the block is not plain. */
function plainValueEnd(data: Uint8Array, n: number): number {
  if (n < HEAD.length + 5) return -1;
  for (let i = 0; i < HEAD.length; i++) if (data[i] !== HEAD[i]) return -1;
  let i = HEAD.length;
  for (; i < n && data[i] !== CR; i++) {
    const b = data[i]!;
    if (b <= SPACE || b > TILDE) return -1; // a space, a control or a non-ASCII byte: the client decides
  }
  const valueEnd = i;
  if (valueEnd === HEAD.length || i + 1 >= n || data[i + 1] !== LF) return -1;
  i += 2;
  // Further headers, `<name>:<value>\r\n` each (a name the client accepts, a value without CR or LF), then the block's end.
  while (i < n && data[i] !== CR) {
    const nameStart = i;
    for (; i < n && data[i] !== COLON; i++) if (data[i]! <= SPACE || data[i]! > TILDE) return -1;
    if (i === nameStart || i === n) return -1;
    for (i++; i < n && data[i] !== CR; i++) if (data[i]! < SPACE || data[i]! > TILDE) return -1;
    if (i + 1 >= n || data[i + 1] !== LF) return -1;
    i += 2;
  }
  return i === n - 2 && data[i + 1] === LF ? valueEnd : -1;
}

/** What this file reads of a message the NATS client (v3) received: its raw bytes and where its headers end. */
interface RawClientMsg {
  readonly _rdata?: unknown;
  readonly _msg?: { readonly hdr?: unknown };
}
