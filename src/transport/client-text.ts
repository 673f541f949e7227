/**
 * What the service checks of text a client wrote into a message before it
 * uses it. A durable command's `Leasehold-Reply-To` is header text: the
 * client library throws on whitespace in a subject, and the server closes a
 * connection whose control line passes its limit (4 KiB by default), so
 * either one, published as it came, took the service down at every
 * redelivery. A header block is decoded by the client library in time that
 * grows with the square of its lines (20,000 lines, 800 KB: 3.2 s of the
 * event loop), and a client may send one up to the server's max_payload; so
 * the service reads a message's headers only when the block is small. And it
 * reads them from their bytes, strictly: the client library's parser throws
 * on a name it does not accept (a space in it), and a throw inside a
 * subscription's callback stopped the client reading its connection for
 * good, so one request could leave every client unanswered. A block is either
 * well formed (a `NATS/1.0` line, `Name: value` lines with token names, the
 * blank line that ends it) or refused whole, and nothing throws.
 */

/** The longest reply subject taken, in UTF-8 bytes: far below the server's control line limit, far above any inbox. */
export const MAX_REPLY_SUBJECT_BYTES = 1024;

/** Whether `subject` is one literal subject (dot-separated non-empty tokens, no whitespace, no wildcard) of at most {@link MAX_REPLY_SUBJECT_BYTES}. */
export function isReplySubject(subject: string): boolean {
  if (subject === "" || Buffer.byteLength(subject) > MAX_REPLY_SUBJECT_BYTES || /[\s]/.test(subject)) return false;
  return subject.split(".").every((token) => token !== "" && token !== "*" && token !== ">");
}

/** `subject` as a log line or an error message may quote it: JSON-escaped, cut to 80 characters. */
export function quotedSubject(subject: string): string {
  const cut = subject.length > 80 ? `${subject.slice(0, 80)}…` : subject;
  return JSON.stringify(cut);
}

/** The largest header block the service decodes: far above what the server and a client write (a few hundred bytes). */
export const MAX_HEADER_BYTES = 16 * 1024;

/** What this file reads of a message the NATS client (v3) received: where its headers end. */
interface RawClientMsg {
  readonly _msg?: { readonly hdr?: unknown };
  /** Its headers' and payload's bytes. */
  readonly _rdata?: unknown;
}

/**
 * The byte length of the header block of `msg` (a core message, or a
 * JetStream message holding one as `msg`); 0 without headers; undefined when
 * the message does not look as this file expects (another client version).
 */
export function headerBytes(msg: unknown): number | undefined {
  const raw = msg as RawClientMsg & { readonly msg?: RawClientMsg };
  const hdr = (raw._msg ?? raw.msg?._msg)?.hdr;
  return typeof hdr === "number" ? Math.max(0, hdr) : undefined;
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
