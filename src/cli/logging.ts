/**
 * The log output of `leasehold serve`: JSON lines (pino) for supervisors and
 * log collectors, or short human lines on a terminal.
 */
import { pino, type Logger } from "pino";
import { visible } from "../tools/table.ts";

/** `--log-format`: `auto` is `text` on a terminal, `json` otherwise. */
export type LogFormat = "auto" | "json" | "text";

/** The format `auto` stands for here. */
export function effectiveFormat(format: LogFormat, isTTY: boolean | undefined): "json" | "text" {
  return format === "auto" ? (isTTY === true ? "text" : "json") : format;
}

const LEVELS: Record<number, string> = { 10: "trace", 20: "debug", 30: "info", 40: "warn", 50: "error", 60: "fatal" };

/**
 * One human line for a pino record: `leasehold: <msg> (key=value ...)` with
 * `warn`/`error` tags. An error is its message (`err=...`); its stack follows
 * on further lines only with `stacks` (`--log-level debug` or `trace`).
 */
export function textLine(record: Record<string, unknown>, stacks = false): string {
  const { level, msg, time: _time, pid: _pid, hostname: _host, service: _service, err, ...rest } = record;
  const name = LEVELS[level as number] ?? "info";
  const tag = name === "info" ? "" : `${name}: `;
  // Every value may carry what a client wrote (a reply subject, an owner): shown, never obeyed (see visible()).
  const fields = Object.entries(rest)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${visible(typeof v === "string" ? v : JSON.stringify(v))}`);
  const error = err as { message?: string; stack?: string } | undefined;
  if (error !== undefined && !stacks) fields.push(`err=${visible(error.message ?? JSON.stringify(err))}`);
  const cause =
    error === undefined || !stacks
      ? ""
      : `\n${String(error.stack ?? JSON.stringify(err))
          .split("\n")
          .map(visible)
          .join("\n")}`;
  return `leasehold: ${tag}${visible(typeof msg === "string" ? msg : JSON.stringify(msg))}${fields.length > 0 ? ` (${fields.join(" ")})` : ""}${cause}`;
}

/** A logger in the given format; text goes to stderr, JSON to stdout. */
export function cliLogger(format: "json" | "text", level: string): Logger {
  if (format === "json") return pino({ level, base: { service: "leasehold" } });
  return pino(
    { level, base: null },
    {
      write(line: string) {
        process.stderr.write(`${textLine(JSON.parse(line) as Record<string, unknown>, level === "debug" || level === "trace")}\n`);
      },
    },
  );
}
