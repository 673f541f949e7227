/**
 * Whether a string a client wrote is a subject a reply may be published to.
 * A request's reply subject was parsed by the NATS server; a durable
 * command's `Leasehold-Reply-To` is header text, and the client library
 * throws on whitespace in a subject while the server closes a connection
 * whose control line passes its limit (4 KiB by default), so either one,
 * published as it came, took the service down at every redelivery.
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
