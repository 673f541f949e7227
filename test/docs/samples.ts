/**
 * The doc-sample runner: the `$ npx leasehold ...` lines of a Markdown page's
 * code blocks, each with the output the page shows under it, run in order
 * against a live service and compared with what the command prints (stdout,
 * then stderr). What differs from run to run is matched, not ignored: a lease
 * id, etag or instant is learned from the first JSON reply that shows it and
 * must then be the same wherever the page shows it again, its later commands
 * included; an instant a command names before any output shows it is moved
 * by as much as the last one learned (the page's clock and the run's differ
 * by that). Only what the clock alone decides is matched by its shape: an
 * instant shown first in a table or a line of text (a creation time) or in a
 * JSON field of the storage time (`storedAt`, often its event's `at` to the
 * millisecond, not always), a duration (`14.7s`, `4m05s`, `850ms`), the
 * audit's time and rate, and the padding of columns that widen with them
 * (two spaces or more match two spaces or more). Everything else must match
 * to the character.
 *
 * An `(exit N)` note under a sample is the exit code the command must end
 * with. A comment before a block says what the runner does first:
 * `<!-- samples: not run (why) -->` leaves the block out;
 * `<!-- samples: <step> (what it does) -->` runs that step of the page's test
 * (a restart, a stream written straight into JetStream) before the block.
 */
import { readFileSync, writeFileSync } from "node:fs";

/** One command of a page with the lines shown under it. */
export interface Sample {
  readonly command: string;
  readonly shown: readonly string[];
  /** Where the shown lines are in the page (line numbers, 0-based, end exclusive). */
  readonly from: number;
  readonly to: number;
  /** The step the page's test runs before this sample (the first of a block after `<!-- samples: <step> ... -->`). */
  readonly before?: string;
  /** The exit code the page notes under it (`(exit 2)`), if it notes one. */
  readonly exit?: number;
}

/** The samples of a page, in order. */
export function pageSamples(text: string): Sample[] {
  const lines = text.split("\n");
  const samples: Sample[] = [];
  let fenced = false;
  let skipped = false;
  let skipNext = false;
  let step: string | undefined;
  let stepNext: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const marker = /^<!-- samples: ([a-z][a-z-]*)/.exec(line);
    if (marker !== null) {
      if (marker[1] === "not") skipNext = true;
      else stepNext = marker[1];
    }
    if (line.startsWith("```")) {
      fenced = !fenced;
      skipped = fenced && skipNext;
      if (fenced) {
        step = stepNext;
        skipNext = false;
        stepNext = undefined;
      }
      continue;
    }
    if (!fenced || skipped || !line.startsWith("$ npx leasehold ")) continue;
    let end = i + 1;
    while (end < lines.length && !lines[end]!.startsWith("$ ") && !lines[end]!.startsWith("```")) end++;
    const shown = lines.slice(i + 1, end).filter(shownLine);
    const exit = lines.slice(i + 1, end).flatMap((l) => /^\(exit (\d+)\)$/.exec(l)?.[1] ?? [])[0];
    samples.push({
      command: line.slice(2),
      shown,
      from: i + 1,
      to: end,
      ...(step === undefined ? {} : { before: step }),
      ...(exit === undefined ? {} : { exit: Number(exit) }),
    });
    step = undefined;
  }
  return samples;
}

/** Lines that are output (a blank line or an `(exit 2)` note is the page's, not the command's). */
function shownLine(line: string): boolean {
  return line.trim() !== "" && !/^\(exit \d+\)$/.test(line);
}

const INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
/** An instant anywhere in a line. */
const INSTANTS = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g;
/** A duration as the tools print one counted from the clock (`formatDuration`), and the audit's time and rate. */
const DURATIONS = /(?<![\w.])-?(?:\d+d\d\dh|\d+h\d\dm|\d+m\d\ds|\d+\.\ds|\d+ms)(?!\w)/g;
const AUDIT_TIME = /\d+\.\d s \(\d+ messages\/s\)/g;
/** Fields whose values differ from run to run. */
const VARYING = new Set(["id", "leaseId", "etag", "instance", "token"]);
/** Instants the clock alone decides, never learned (a message's storage time is often its event's `at` to the millisecond, not always). */
const CLOCK_ONLY = new Set(["storedAt"]);

/** What one page's run has learned: sample value -> this run's value. */
export class Learned {
  private readonly values = new Map<string, string>();
  private readonly etags = new Map<string, string>();
  /** The run's clock minus the page's, as of the last instant learned. */
  private shiftMs = 0;

  /**
   * The command as this run must send it: placeholders and learned values
   * replaced, and an instant not seen yet moved by the last shift learned.
   */
  command(command: string): string {
    const withEtags = command.replace(/<etag of the (\w+)>/g, (whole, op: string) => this.etags.get(op) ?? whole);
    for (const instant of withEtags.match(INSTANTS) ?? [])
      if (!this.values.has(instant)) this.values.set(instant, new Date(Date.parse(instant) + this.shiftMs).toISOString());
    return this.substitute(withEtags);
  }

  /** Learns from a JSON reply the sample shows and the one the command printed. */
  learn(shown: unknown, actual: unknown): void {
    this.walk(shown, actual, undefined);
  }

  /** Keeps the etag of an `op`'s reply for a later `<etag of the op>`. */
  reply(actual: unknown, op: string): void {
    const etag = (actual as { lease?: { etag?: unknown } } | null)?.lease?.etag;
    if (typeof etag === "string") this.etags.set(op, etag);
  }

  private learnValue(shown: string, actual: string): void {
    if (shown === actual || this.values.has(shown)) return;
    this.values.set(shown, actual);
    if (INSTANT.test(shown)) this.shiftMs = Date.parse(actual) - Date.parse(shown);
  }

  private walk(shown: unknown, actual: unknown, key: string | undefined): void {
    if (typeof shown === "string" && typeof actual === "string") {
      if (key !== undefined && CLOCK_ONLY.has(key)) return;
      if (INSTANT.test(shown) || (key !== undefined && VARYING.has(key))) this.learnValue(shown, actual);
      return;
    }
    if (Array.isArray(shown) && Array.isArray(actual)) {
      shown.forEach((s, i) => this.walk(s, actual[i], key));
      return;
    }
    if (shown !== null && actual !== null && typeof shown === "object" && typeof actual === "object") {
      for (const [k, v] of Object.entries(shown)) this.walk(v, (actual as Record<string, unknown>)[k], k);
    }
  }

  /** This run's value for a page's value, if learned. */
  valueOf(shown: string): string | undefined {
    return this.values.get(shown);
  }

  /** `text` printed by this run with the page's own values put back (for rendering into the page). */
  restore(text: string): string {
    let out = text;
    for (const [from, to] of [...this.values].sort((a, b) => b[1].length - a[1].length)) out = out.replaceAll(to, from);
    return out;
  }

  /** `text` with every learned sample value replaced by this run's. */
  substitute(text: string): string {
    let out = text;
    for (const [from, to] of [...this.values].sort((a, b) => b[0].length - a[0].length)) out = out.replaceAll(from, to);
    return out;
  }
}

/** What the clock alone decides in a line: an instant, the audit's time and rate, a duration, a run of padding. */
const CLOCK_TOKENS = new RegExp(`${INSTANTS.source}|${AUDIT_TIME.source}|${DURATIONS.source}| {2,}`, "g");
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * Whether a printed line is the shown one: the shown line's learned values
 * must be this run's, and where it shows an instant not learned, a duration,
 * the audit's time and rate, or padding of two spaces or more, the printed
 * line may have any of the same kind. A JSON line's clock-only fields
 * (`storedAt`) may hold any instant.
 */
export function matches(shown: string, printedLine: string, learned: Learned): boolean {
  const json = parseJson(shown);
  const real = parseJson(printedLine);
  if (json !== undefined && real !== undefined) {
    const masked = (value: unknown) =>
      JSON.stringify(value, (k, v: unknown) => (CLOCK_ONLY.has(k) && typeof v === "string" && INSTANT.test(v) ? "<instant>" : v));
    return masked(JSON.parse(learned.substitute(shown))) === masked(real) && JSON.stringify(real) === printedLine;
  }
  let pattern = "";
  let last = 0;
  for (const token of shown.matchAll(CLOCK_TOKENS)) {
    pattern += escape(learned.substitute(shown.slice(last, token.index)));
    const [text] = token;
    const value = learned.valueOf(text);
    pattern += INSTANT.test(text)
      ? value !== undefined
        ? escape(value)
        : INSTANTS.source
      : text.startsWith(" ")
        ? " {2,}"
        : text.endsWith("messages/s)")
          ? AUDIT_TIME.source
          : DURATIONS.source;
    last = token.index + text.length;
  }
  pattern += escape(learned.substitute(shown.slice(last)));
  return new RegExp(`^${pattern}$`).test(printedLine);
}

/** The lines a command printed, as a page shows them: stdout, then stderr. */
export function printed(stdout: string, stderr: string): string[] {
  return [...stdout.split("\n"), ...stderr.split("\n")].filter(shownLine);
}

/** The same with the blank lines within each stream kept (what a render writes; the comparison leaves them out). */
export function printedAsIs(stdout: string, stderr: string): string[] {
  const lines = (text: string) => (text.trim() === "" ? [] : text.replace(/^\n+|\s+$/g, "").split("\n"));
  return [...lines(stdout), ...lines(stderr)];
}

/** Compares one sample with what its command printed; returns the differences (none: it matches). */
export function compare(sample: Sample, actual: readonly string[], learned: Learned): string[] {
  const op = /call \w+\.(\w+)/.exec(sample.command)?.[1] ?? "";
  sample.shown.forEach((line, i) => {
    const json = parseJson(line);
    const real = parseJson(actual[i] ?? "");
    if (json !== undefined && real !== undefined) learned.learn(json, real);
  });
  for (const line of actual) {
    const real = parseJson(line);
    if (real !== undefined) learned.reply(real, op);
  }
  const expected = sample.shown.map((l) => learned.substitute(l));
  if (sample.shown.length === actual.length && sample.shown.every((l, i) => matches(l, actual[i]!, learned))) return [];
  return [
    `$ ${sample.command}\n  shown:\n${expected.map((l) => `    ${l}`).join("\n")}\n  printed:\n${actual.map((l) => `    ${l}`).join("\n")}`,
  ];
}

function parseJson(line: string): unknown {
  if (!line.startsWith("{")) return undefined;
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Writes what the commands printed into the page in place of its samples
 * (`SAMPLES_RENDER=1`); with `commands`, the commands as this run sent them
 * too (`SAMPLES_RENDER=run`: the page becomes one run, every id and instant
 * its own).
 */
export function render(
  path: string,
  samples: readonly Sample[],
  outputs: readonly (readonly string[])[],
  commands?: readonly string[],
): void {
  const lines = readFileSync(path, "utf8").split("\n");
  for (let i = samples.length - 1; i >= 0; i--) {
    const { from, to } = samples[i]!;
    const segment = lines.slice(from, to);
    const notes = segment.flatMap((l, j) => (/^\(exit \d+\)$/.test(l) ? (segment[j - 1]?.trim() === "" ? ["", l] : [l]) : []));
    const gap = to > from && lines[to - 1]!.trim() === "" && lines[to]?.startsWith("$ ") === true ? [""] : [];
    lines.splice(from, to - from, ...outputs[i]!, ...notes, ...gap);
    if (commands !== undefined) lines[from - 1] = `$ ${commands[i]!}`;
  }
  writeFileSync(path, lines.join("\n"));
}
