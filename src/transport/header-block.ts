/**
 * A received message's header block, read from its bytes and strictly: the
 * NATS client's own header parser throws on a name it does not accept (a
 * space in it), and a throw inside a subscription's callback stopped the
 * client reading its connection for good, so one request could leave every
 * client unanswered. Here a block is either well formed (a `NATS/1.0` line,
 * `Name: value` lines with token names, the blank line that ends it) or
 * refused whole, and nothing throws.
 */
import { MAX_HEADER_BYTES, headerBytes } from "./client-text.ts";

/** What this file reads of a message the NATS client (v3) received: the bytes of its headers and payload. */
interface RawClientMsg {
  readonly _rdata?: unknown;
}

/** A header block that could be read: its lines in order, and the block as text. */
export interface HeaderBlock {
  readonly lines: readonly (readonly [name: string, value: string])[];
  readonly text: string;
}

/** Why a message's headers are not read. */
export type UnreadHeaders = { readonly unread: "too large" | "malformed" };

/** A header name as RFC 9110 has it (a token). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

const utf8 = new TextDecoder();

/**
 * The header block of `msg` (a core message, or a JetStream message holding
 * one as `msg`): undefined when it has none, or (another client version) its
 * bytes cannot be found; the reason when it is too large or malformed.
 */
export function headerBlockOf(msg: unknown): HeaderBlock | UnreadHeaders | undefined {
  const length = headerBytes(msg);
  if (length === undefined || length === 0) return undefined;
  if (length > MAX_HEADER_BYTES) return { unread: "too large" };
  const raw = msg as RawClientMsg & { readonly msg?: RawClientMsg };
  const data = raw._rdata ?? raw.msg?._rdata;
  if (!(data instanceof Uint8Array) || data.length < length) return undefined;
  return parseHeaderBlock(utf8.decode(data.subarray(0, length)));
}

/** Reads a header block's text; malformed unless it is exactly what the NATS protocol describes. */
export function parseHeaderBlock(text: string): HeaderBlock | UnreadHeaders {
  if (!text.startsWith("NATS/1.0") || !text.endsWith("\r\n\r\n")) return { unread: "malformed" };
  const rows = text.slice(0, -4).split("\r\n");
  // The first row is the version, maybe with a status code and description.
  if (/[\r\n]/.test(rows[0]!)) return { unread: "malformed" };
  const lines: [string, string][] = [];
  for (const row of rows.slice(1)) {
    const colon = row.indexOf(":");
    const name = colon < 0 ? "" : row.slice(0, colon);
    if (!TOKEN.test(name) || /[\r\n]/.test(row)) return { unread: "malformed" };
    lines.push([name, row.slice(colon + 1).trim()]);
  }
  return { lines, text };
}

/** The values of the lines named `name` (exactly, letter case included). */
export function headerValues(block: HeaderBlock, name: string): string[] {
  return block.lines.flatMap(([n, v]) => (n === name ? [v] : []));
}
