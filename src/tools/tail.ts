/**
 * `leasehold tail`: follows the stream live and turns each message into one
 * readable line (or, with --json, one JSON object), optionally narrowed to
 * one kind or one actor and started at an instant.
 *
 * @example
 * 2026-11-30T19:14:08.647Z #42 lock reports/nightly LockAcquired owner=worker-a generation=1 ttlMs=15000 expiresAt=2026-11-30T19:14:23.647Z previousOwner="" requestId=r-17
 */
import { isUnparsable } from "../events/envelope.ts";
import { decodeEvent } from "../events/decode.ts";
import { type EventLog, type Following, type StoredMessage } from "../events/event-log.ts";
import { type ActorKind, type Subjects } from "../contract/subjects.ts";
import { actorOfSubject } from "./stream-fold.ts";
import { cell, quoted, visible, visibleJson } from "./table.ts";
import { firstSeqAtOrAfter, iso } from "./time.ts";
import { ToolUsageError } from "./errors.ts";

/** What to follow. */
export interface TailOptions {
  readonly kind?: ActorKind | undefined;
  /** One actor's id (needs `kind`). */
  readonly id?: string | undefined;
  /** Start at the first message stored at or after this instant (default: only new messages). */
  readonly since?: number | undefined;
  /** Start at this sequence (overrides `since`). */
  readonly fromSeq?: number | undefined;
  /** Raw JSON lines instead of readable ones. */
  readonly json?: boolean | undefined;
}

/** The subject filter for a kind and id (the whole stream when neither is given). */
export function tailFilter(subjects: Subjects, kind?: ActorKind, id?: string): string {
  if (id !== undefined) {
    if (kind === undefined) throw new ToolUsageError("--id needs --kind (an id names one actor of one kind)");
    return subjects.event(kind, id);
  }
  return kind === undefined ? subjects.allEvents : subjects.eventsOfKind(kind);
}

/** A `data` value as `key=value`: plain strings and numbers as they are, anything else as JSON. */
function field(key: string, value: unknown): string {
  if (typeof value === "string") return `${key}=${value.includes("=") ? quoted(value) : cell(value)}`;
  if (typeof value === "number" || typeof value === "boolean") return `${key}=${value}`;
  return `${key}=${visible(JSON.stringify(value))}`;
}

/** One message as a readable line: `<at> #<seq> <kind> <id> <Type> key=value ... [requestId=...] [by=...]`. */
export function formatEventLine(message: StoredMessage, subjects: Subjects): string {
  const actor = actorOfSubject(subjects, message.subject);
  const who = actor === null ? message.subject : `${actor.kind} ${cell(actor.id)}`;
  const entry = decodeEvent(message.payload, message.seq, message.msgId);
  if (isUnparsable(entry)) return `${iso(message.time)} #${message.seq} ${who} UNPARSABLE ${entry.reason.split("\n")[0]}`;
  const e = entry.event;
  const fields = Object.entries(e.data as Record<string, unknown>).map(([k, v]) => field(k, v));
  if (e.requestId !== undefined) fields.push(field("requestId", e.requestId));
  if (e.by !== undefined) fields.push(field("by", e.by));
  return [e.at, `#${message.seq}`, who, e.type, ...fields].join(" ");
}

const lenientUtf8 = new TextDecoder("utf-8");

/** One message as a JSON line: sequence, subject, stored time and the event as stored (or why it does not parse). */
export function formatEventJson(message: StoredMessage): string {
  const entry = decodeEvent(message.payload, message.seq, message.msgId);
  const base = { seq: message.seq, subject: message.subject, storedAt: iso(message.time) };
  if (!isUnparsable(entry)) return visibleJson(JSON.stringify({ ...base, event: entry.event }));
  return visibleJson(JSON.stringify({ ...base, unparsable: entry.reason, payload: lenientUtf8.decode(message.payload) }));
}

/** A tail in progress: where it started, on which filter; `stop()` ends it. */
export interface Tail extends Following {
  readonly fromSeq: number;
  readonly filter: string;
}

/**
 * Follows the log from where the options say (default: after the last
 * message now stored) and hands each formatted line to `write`.
 */
export async function startTail(log: EventLog, subjects: Subjects, options: TailOptions, write: (line: string) => void): Promise<Tail> {
  const filter = tailFilter(subjects, options.kind, options.id);
  const fromSeq =
    options.fromSeq ?? (options.since !== undefined ? await firstSeqAtOrAfter(log, options.since) : (await log.lastSeq()) + 1);
  const format = options.json === true ? formatEventJson : (m: StoredMessage) => formatEventLine(m, subjects);
  const following = await log.follow(fromSeq, (m) => write(format(m)), filter);
  return {
    fromSeq,
    filter,
    stop: () => following.stop(),
    restart: () => following.restart(),
    caughtUp: (ms) => following.caughtUp(ms),
    vouchesForLeader: following.vouchesForLeader,
  };
}
