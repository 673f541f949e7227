/**
 * Instants and durations as the operator tools take and show them: RFC 3339
 * instants (`2026-11-30T19:14:08.647Z`, any offset accepted on input), short
 * durations (`500ms`, `30s`, `10m`, `2h`, `1d`), and the search for the first
 * stream message stored at or after an instant.
 */
import type { EventLog } from "../events/event-log.ts";
import { ToolUsageError } from "./errors.ts";

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `10m`, `30s`, `1h30m`, `250ms`; throws {@link ToolUsageError} otherwise. */
export function parseDuration(text: string, flag = "duration"): number {
  const parts = /^(\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/.test(text.trim()) ? text.trim().match(/\d+(?:\.\d+)?(?:ms|s|m|h|d)/g) : null;
  if (parts === null)
    throw new ToolUsageError(`${flag}: expected a duration such as 500ms, 30s, 10m, 2h or 1h30m, got ${JSON.stringify(text)}`);
  let total = 0;
  for (const part of parts) {
    const [, value, unit] = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(part)!;
    total += Number(value) * DURATION_UNITS[unit!]!;
  }
  return Math.round(total);
}

/** Parses an RFC 3339 instant (or `now`) into epoch milliseconds; throws {@link ToolUsageError} otherwise. */
export function parseInstant(text: string, flag = "instant", now: () => number = Date.now): number {
  if (text === "now") return now();
  // Date.parse accepts much more than RFC 3339; insist on a full date and time with a zone.
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms))
    throw new ToolUsageError(`${flag}: expected an RFC 3339 instant such as 2026-11-30T19:14:08.647Z, got ${JSON.stringify(text)}`);
  return ms;
}

/** `--since`: an instant, or a duration meaning that long before `now`. */
export function parseSince(text: string, now: () => number = Date.now): number {
  if (/^\d{4}-/.test(text) || text === "now") return parseInstant(text, "--since", now);
  return now() - parseDuration(text, "--since");
}

/** A position in the stream: a sequence number or an instant. */
export type StreamPosition = { readonly seq: number } | { readonly time: number };

/** Parses `--from`/`--to`: a whole number is a stream sequence, anything else an instant. */
export function parsePosition(text: string, flag: string, now: () => number = Date.now): StreamPosition {
  if (/^\d+$/.test(text)) return { seq: Number(text) };
  return { time: parseInstant(text, flag, now) };
}

/** `--since`/`--until`: where a tool starts looking and where it stops, each by sequence or by time (inclusive). */
export interface StreamBounds {
  readonly sinceSeq?: number | undefined;
  readonly sinceTime?: number | undefined;
  readonly untilSeq?: number | undefined;
  readonly untilTime?: number | undefined;
}

/**
 * Parses `--since` and `--until` (each a stream sequence or an RFC 3339
 * instant; `flags` names them otherwise, e.g. audit's `--from`/`--to`);
 * refuses an empty interval.
 */
export function parseBounds(
  since: string | undefined,
  until: string | undefined,
  now: () => number = Date.now,
  flags: readonly [string, string] = ["--since", "--until"],
): StreamBounds {
  const from = since === undefined ? undefined : parsePosition(since, flags[0], now);
  const to = until === undefined ? undefined : parsePosition(until, flags[1], now);
  const bounds: StreamBounds = {
    sinceSeq: from !== undefined && "seq" in from ? from.seq : undefined,
    sinceTime: from !== undefined && "time" in from ? from.time : undefined,
    untilSeq: to !== undefined && "seq" in to ? to.seq : undefined,
    untilTime: to !== undefined && "time" in to ? to.time : undefined,
  };
  const seqs = bounds.sinceSeq !== undefined && bounds.untilSeq !== undefined && bounds.sinceSeq > bounds.untilSeq;
  const times = bounds.sinceTime !== undefined && bounds.untilTime !== undefined && bounds.sinceTime > bounds.untilTime;
  if (seqs || times) throw new ToolUsageError(`${flags[0]} ${since} comes after ${flags[1]} ${until}: nothing lies between them`);
  return bounds;
}

/** The earlier of two optional bounds. */
export function earlier(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : Math.min(a, b);
}

/** Parses a positive whole number flag (`--seq`, `--limit`). */
export function parseCount(text: string, flag: string, min = 0): number {
  if (!/^\d+$/.test(text) || Number(text) < min)
    throw new ToolUsageError(`${flag}: expected a whole number${min > 0 ? ` >= ${min}` : ""}, got ${JSON.stringify(text)}`);
  return Number(text);
}

/** Formats epoch milliseconds as the contract writes instants. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** A short human duration: `850ms`, `12.3s`, `4m05s`, `2h07m`, `3d04h`. */
export function formatDuration(ms: number): string {
  const sign = ms < 0 ? "-" : "";
  const a = Math.abs(ms);
  if (a < 1000) return `${sign}${Math.round(a)}ms`;
  if (a < 60_000) return `${sign}${(a / 1000).toFixed(1)}s`;
  const pad = (n: number) => String(n).padStart(2, "0");
  if (a < 3_600_000) return `${sign}${Math.floor(a / 60_000)}m${pad(Math.floor((a % 60_000) / 1000))}s`;
  if (a < 86_400_000) return `${sign}${Math.floor(a / 3_600_000)}h${pad(Math.floor((a % 3_600_000) / 60_000))}m`;
  return `${sign}${Math.floor(a / 86_400_000)}d${pad(Math.floor((a % 86_400_000) / 3_600_000))}h`;
}

/**
 * The sequence of the first message stored at or after `time` (the stream's
 * own timestamps rise with its sequence), or the last sequence + 1 when every
 * message is older. A binary search: about log2(n) one-message reads.
 */
export async function firstSeqAtOrAfter(log: EventLog, time: number): Promise<number> {
  const last = await log.lastSeq();
  let lo = 1;
  let hi = last + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const m = await firstFrom(log, mid);
    if (m === undefined) {
      hi = mid;
    } else if (m.time >= time) {
      hi = Math.min(mid, m.seq);
    } else {
      lo = m.seq + 1;
    }
  }
  return lo;
}

async function firstFrom(log: EventLog, fromSeq: number): Promise<{ seq: number; time: number } | undefined> {
  for await (const m of log.readStream({ fromSeq })) return { seq: m.seq, time: m.time };
  return undefined;
}
