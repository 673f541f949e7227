/**
 * How large a received message's header block is, read without decoding it.
 * The NATS client library decodes a header block in time that grows with the
 * square of its lines (20,000 lines, 800 KB: 3.2 s of the event loop), and a
 * client may send one up to the server's max_payload; so the service reads a
 * request's or durable command's headers only when the block is small.
 */

/** The largest header block the service decodes: far above what the server and a client write (a few hundred bytes). */
export const MAX_HEADER_BYTES = 16 * 1024;

/** What this file reads of a message the NATS client (v3) received: where its headers end. */
interface RawClientMsg {
  readonly _msg?: { readonly hdr?: unknown };
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

/** Whether `msg`'s headers are too large to decode (unknown sizes are decoded, as before). */
export function headersTooLarge(msg: unknown): boolean {
  return (headerBytes(msg) ?? 0) > MAX_HEADER_BYTES;
}
