/**
 * The doc-sample runner: the `$ npx leasehold ...` lines of a Markdown page's
 * code blocks, each with the output the page shows under it, run in order
 * against a live service and compared with what the command prints (stdout,
 * then stderr). What differs from run to run (lease ids, etags, instants) is
 * learned from the first place it appears in a JSON reply and substituted in
 * the page's later commands and samples, so everything else must match to
 * the character. A block after `<!-- samples: not run -->` is left out (one
 * that needs a restart, or minutes to pass).
 */
import { readFileSync, writeFileSync } from "node:fs";

/** One command of a page with the lines shown under it. */
export interface Sample {
  readonly command: string;
  readonly shown: readonly string[];
  /** Where the shown lines are in the page (line numbers, 0-based, end exclusive). */
  readonly from: number;
  readonly to: number;
}

/** The samples of a page, in order. */
export function pageSamples(text: string): Sample[] {
  const lines = text.split("\n");
  const samples: Sample[] = [];
  let fenced = false;
  let skipped = false;
  let skipNext = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^<!-- samples: not run/.test(line)) skipNext = true;
    if (line.startsWith("```")) {
      fenced = !fenced;
      skipped = fenced && skipNext;
      if (fenced) skipNext = false;
      continue;
    }
    if (!fenced || skipped || !line.startsWith("$ npx leasehold ")) continue;
    let end = i + 1;
    while (end < lines.length && !lines[end]!.startsWith("$ ") && !lines[end]!.startsWith("```")) end++;
    samples.push({ command: line.slice(2), shown: lines.slice(i + 1, end).filter(shownLine), from: i + 1, to: end });
  }
  return samples;
}

/** Lines that are output (a blank line or an `(exit 2)` note is the page's, not the command's). */
function shownLine(line: string): boolean {
  return line.trim() !== "" && !/^\(exit \d+\)$/.test(line);
}

const INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
/** Fields whose values differ from run to run. */
const VARYING = new Set(["id", "leaseId", "etag", "instance", "token"]);

/** What one page's run has learned: sample value -> this run's value. */
export class Learned {
  private readonly values = new Map<string, string>();
  private readonly etags = new Map<string, string>();

  /** The command as this run must send it: placeholders and learned values replaced. */
  command(command: string): string {
    const withEtags = command.replace(/<etag of the (\w+)>/g, (whole, op: string) => this.etags.get(op) ?? whole);
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

  private walk(shown: unknown, actual: unknown, key: string | undefined): void {
    if (typeof shown === "string" && typeof actual === "string") {
      if (shown !== actual && !this.values.has(shown) && (INSTANT.test(shown) || (key !== undefined && VARYING.has(key))))
        this.values.set(shown, actual);
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

/** The lines a command printed, as a page shows them: stdout, then stderr. */
export function printed(stdout: string, stderr: string): string[] {
  return [...stdout.split("\n"), ...stderr.split("\n")].filter(shownLine);
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
  if (expected.length === actual.length && expected.every((l, i) => l === actual[i])) return [];
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

/** Writes what the commands printed into the page in place of its samples (SAMPLES_RENDER=1). */
export function render(path: string, samples: readonly Sample[], outputs: readonly (readonly string[])[]): void {
  const lines = readFileSync(path, "utf8").split("\n");
  for (let i = samples.length - 1; i >= 0; i--) {
    const { from, to } = samples[i]!;
    const kept = lines.slice(from, to).filter((l) => !shownLine(l));
    lines.splice(from, to - from, ...outputs[i]!, ...kept);
  }
  writeFileSync(path, lines.join("\n"));
}
