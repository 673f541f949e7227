/**
 * What the service checks of text a client wrote into a message before it
 * uses it. A durable command's `Leasehold-Reply-To` is header text: the
 * client library throws on whitespace in a subject, and the server closes a
 * connection whose control line passes its limit (4 KiB by default), so
 * either one, published as it came, took the service down at every
 * redelivery. A header block is decoded by the client library in time that
 * grows with the square of its lines (20,000 lines, 800 KB: 3.2 s of the
 * event loop), and a client may send one up to the server's max_payload; so
 * the service reads a message's headers only when the block is small.
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
