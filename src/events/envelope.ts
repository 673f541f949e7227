/**
 * The event envelope of docs/protocol.md ("The event stream"): its shape,
 * how it is written, the message id a request's event is appended with, and
 * the instants it carries. Reading it back is src/events/decode.ts's.
 */
import type { ActorKind } from "../contract/subjects.ts";

/** One event as stored in the stream: `{type, v: 1, at, kind, id, requestId?, data}`. */
export interface EventEnvelope<Type extends string = string, Data = unknown> {
  readonly type: Type;
  readonly v: 1;
  /** The server instant that decided it (ISO 8601, milliseconds, UTC). */
  readonly at: string;
  readonly kind: ActorKind;
  /** The actor's own id (lock name, proxy name, host, route, session id). */
  readonly id: string;
  readonly requestId?: string;
  /** Who sent the request behind it, as NATS said (`<account>/<user>` or `<account>`); absent when unknown. */
  readonly by?: string;
  readonly data: Data;
}

/** An event together with where the stream put it. */
export interface RecordedEvent<E extends EventEnvelope = EventEnvelope> {
  readonly seq: number;
  readonly event: E;
  /** `Nats-Msg-Id` the event was appended with, when known. */
  readonly msgId?: string | undefined;
}

/** A message on an actor's subject that is not a valid event (kept so the actor can refuse to guess). */
export interface UnparsableRecord {
  readonly seq: number;
  readonly unparsable: true;
  readonly reason: string;
  readonly msgId?: string | undefined;
}

/** What reading an actor's history yields: events, and messages that did not parse. */
export type HistoryEntry<E extends EventEnvelope = EventEnvelope> = RecordedEvent<E> | UnparsableRecord;

/** Narrows a history entry to an unparsable record. */
export function isUnparsable(entry: HistoryEntry): entry is UnparsableRecord {
  return "unparsable" in entry;
}

const utf8Encoder = new TextEncoder();

/** Serializes an event for the stream. */
export function encodeEvent(event: EventEnvelope): Uint8Array {
  return utf8Encoder.encode(JSON.stringify(event));
}

/**
 * The message id a request's event is appended with:
 * `<subject>|<op>|<fingerprint>|<requestId>` (a repeated request gets the
 * same one, so JetStream stores it once; the fingerprint tells it from
 * another request reusing its requestId), or a unique id for a request
 * without a `requestId`.
 */
export function requestMsgId(subject: string, op: string, requestId: string, fingerprint = ""): string {
  const msgId = fingerprint === "" ? `${subject}|${op}|${requestId}` : `${subject}|${op}|${fingerprint}|${requestId}`;
  return LINE_BREAK.test(requestId) ? headerSafe(msgId) : msgId;
}

/**
 * A header value may hold no CR or LF, and a requestId may. A message id
 * whose requestId holds one is written as `%` then the id with `%`, CR and
 * LF percent-escaped: no subject starts with `%` (a prefix is tokens of
 * `[A-Za-z0-9_-]`), so the mark cannot be mistaken, every other id stays as
 * it always was, and {@link plainMsgId} gives the id back exactly.
 */
const LINE_BREAK = /[\r\n]/;
const ESCAPED_MARK = "%";

function headerSafe(msgId: string): string {
  return ESCAPED_MARK + msgId.replace(/[%\r\n]/g, (c) => (c === "%" ? "%25" : c === "\r" ? "%0D" : "%0A"));
}

/** `msgId` with its escapes undone (itself when {@link headerSafe} did not write it). */
function plainMsgId(msgId: string): string {
  if (!msgId.startsWith(ESCAPED_MARK)) return msgId;
  return msgId.slice(1).replace(/%(25|0D|0A)/g, (_, h: string) => (h === "25" ? "%" : h === "0D" ? "\r" : "\n"));
}

/** The subject a request's event was appended to, read back from its message id; undefined for an id without one. */
export function subjectOfMsgId(msgId: string): string | undefined {
  const plain = plainMsgId(msgId);
  const bar = plain.indexOf("|");
  return bar < 0 ? undefined : plain.slice(0, bar);
}

/** A request's id and fingerprint, read back from the message id of its event; undefined for an id without them. */
export function requestOfMsgId(escaped: string): { readonly requestId: string; readonly fingerprint: string } | undefined {
  const msgId = plainMsgId(escaped);
  const first = msgId.indexOf("|");
  const second = first < 0 ? -1 : msgId.indexOf("|", first + 1);
  const third = second < 0 ? -1 : msgId.indexOf("|", second + 1);
  if (third !== second + 17) return undefined;
  const fingerprint = msgId.slice(second + 1, third);
  return /^[0-9a-f]{16}$/.test(fingerprint) ? { requestId: msgId.slice(third + 1), fingerprint } : undefined;
}

/**
 * A variant of `msgId` for the `n`-th new attempt of the same request, used
 * when JetStream says the id was seen but the stream holds no event with it
 * (a proposal lost in a leader change stays in the duplicate window). The
 * expected-sequence check still lets at most one of the variants be stored.
 */
export function msgIdVariant(msgId: string, n: number): string {
  const base = baseMsgId(msgId);
  const bar = base.indexOf("|");
  if (bar < 0) return `${base}#${n}`;
  const second = base.indexOf("|", bar + 1);
  return `${base.slice(0, second)}#${n}${base.slice(second)}`;
}

/** The message id a variant stands for (itself when it is not a variant). */
export function baseMsgId(msgId: string): string {
  if (!msgId.includes("#")) return msgId; // not a variant: no pattern to run (the fold asks once per event)
  return msgId.includes("|") ? msgId.replace(/^([^|]*\|[^|#]*)#\d+\|/, "$1|") : msgId.replace(/#\d+$/, "");
}

/**
 * Epoch milliseconds of an instant as the events write it, at a fraction of
 * `Date.parse`'s cost. Folding a history parses every event's `at` (and its
 * expiries) several times over: in the schema check, the fold and the
 * audit; `Date.parse` is most of a microsecond of that per event.
 *
 * Only the canonical form `Date.prototype.toISOString()` writes
 * (`YYYY-MM-DDTHH:MM:SS.sssZ`, years 0000–9999) with a day up to 28 and an
 * hour up to 23 is read here; anything else (the 29th–31st, other forms,
 * garbage) goes to `Date.parse`, so the answer is always `Date.parse`'s
 * (test/events/instant.unit.test.ts checks that over generated strings).
 */

/** An RFC 3339 UTC instant as the events accept it: ends in `Z` and parses (the `instant` field schema's refinement). */
export function isUtcInstant(s: string): boolean {
  return s.endsWith("Z") && !Number.isNaN(instantMs(s));
}

/** The last instant read and its value: one event's `at` is read by the schema check, the fold and the audit in turn. */
let lastText = "";
let lastMs = Number.NaN;

/** `Date.parse(s)`, computed directly when `s` is a canonical instant. */
export function instantMs(s: string): number {
  if (s === lastText) return lastMs;
  const ms = readInstant(s);
  lastText = s;
  lastMs = ms;
  return ms;
}

function readInstant(s: string): number {
  if (s.length !== 24 || s.charCodeAt(23) !== 90 /* Z */) return Date.parse(s);
  const year = fourDigits(s, 0);
  const month = twoDigits(s, 5);
  const day = twoDigits(s, 8);
  const hour = twoDigits(s, 11);
  const minute = twoDigits(s, 14);
  const second = twoDigits(s, 17);
  const milli = twoDigits(s, 20) * 10 + digit(s, 22);
  if (
    s.charCodeAt(4) !== 45 /* - */ ||
    s.charCodeAt(7) !== 45 ||
    s.charCodeAt(10) !== 84 /* T */ ||
    s.charCodeAt(13) !== 58 /* : */ ||
    s.charCodeAt(16) !== 58 ||
    s.charCodeAt(19) !== 46 /* . */ ||
    !(
      year >= 0 &&
      month >= 1 &&
      month <= 12 &&
      day >= 1 &&
      day <= 28 &&
      hour >= 0 &&
      hour <= 23 &&
      minute >= 0 &&
      minute <= 59 &&
      second >= 0 &&
      second <= 59 &&
      milli >= 0
    )
  ) {
    return Date.parse(s);
  }
  return ((daysSinceEpoch(year, month, day) * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + milli;
}

/** The digit at `i`, or a large negative number when it is not one (so every sum it joins is negative). */
function digit(s: string, i: number): number {
  const d = s.charCodeAt(i) - 48;
  return d >= 0 && d <= 9 ? d : -1e6;
}

function twoDigits(s: string, i: number): number {
  return digit(s, i) * 10 + digit(s, i + 1);
}

function fourDigits(s: string, i: number): number {
  return twoDigits(s, i) * 100 + twoDigits(s, i + 2);
}

/** Days from 1970-01-01 to a date of the proleptic Gregorian calendar (H. Hinnant's days_from_civil). */
function daysSinceEpoch(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}
