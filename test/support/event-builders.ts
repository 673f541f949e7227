/**
 * Events for specs and harnesses: recorded events built the way the stream
 * would hold them (encoded, then decoded, so only events the stream accepts
 * can be given), and stored messages decoded strictly (a message that does
 * not parse fails the test).
 */
import { encodeEvent, isUnparsable, type EventEnvelope, type HistoryEntry, type RecordedEvent } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import { type StoredMessage } from "../../src/events/event-log.ts";
import { type ActorKind } from "../../src/contract/subjects.ts";

/** The instant specs and in-memory harnesses start at. */
export const T0 = Date.parse("2026-01-01T00:00:00.000Z");

/** An instant as events carry it. */
export const iso = (ms: number): string => new Date(ms).toISOString();

/** One recorded event of actor `kind`/`id` at stream sequence `seq`, decided at `at`; it goes through encode/decode. */
export function specEvent(seq: number, kind: ActorKind, id: string, type: string, data: unknown, at: number): HistoryEntry {
  const envelope: EventEnvelope = { type, v: 1, at: iso(at), kind, id, data };
  const entry = decodeEvent(encodeEvent(envelope), seq, `msg-${seq}`);
  if (isUnparsable(entry)) throw new Error(`spec event at ${seq} does not parse: ${entry.reason}`);
  return entry;
}

/** A stored message decoded as the service decodes it; throws (`<what> at <seq> ...`) when it does not parse. */
export function decodeOrThrow(message: StoredMessage, what: string): RecordedEvent {
  const entry = decodeEvent(message.payload, message.seq, message.msgId);
  if (isUnparsable(entry)) throw new Error(`${what} at ${message.seq}: ${entry.reason}`);
  return entry;
}
