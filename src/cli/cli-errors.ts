/**
 * The exit codes of every `leasehold` command and the errors that carry them,
 * so that anything a user can cause ends as one line on stderr, never a stack
 * trace (`--log-level debug` adds the cause).
 */

/** Exit codes, the same for every command. */
export const EXIT = {
  /** Done. */
  ok: 0,
  /** `audit` found violations, or the service refused a `call` (a contract error). */
  refused: 1,
  /** A usage error (bad flag, bad value) or NATS, the stream or the service could not be reached. */
  usage: 2,
} as const;

/** A failure the user can act on: its message is printed as one line and the command exits with `exitCode`. */
export class CliError extends Error {
  override readonly name: string = "CliError";
  constructor(
    message: string,
    readonly exitCode: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A bad flag, flag value or combination of flags (exit 2). */
export class UsageError extends CliError {
  override readonly name = "UsageError";
  constructor(message: string, options?: ErrorOptions) {
    super(message, EXIT.usage, options);
  }
}

/** NATS, or something on it, could not be reached or refused us (exit 2). */
export class ConnectFailure extends CliError {
  override readonly name = "ConnectFailure";
  constructor(message: string, options?: ErrorOptions) {
    super(message, EXIT.usage, options);
  }
}

/** Any error the tools throw with an exit code of their own (ToolUsageError, ToolConnectionError). */
function exitCodeOf(error: unknown): number | undefined {
  const code = (error as { exitCode?: unknown } | null)?.exitCode;
  return typeof code === "number" ? code : undefined;
}

/**
 * Prints `leasehold <command>: <message>` on stderr (one line) and returns the
 * exit code for `error`. A failure nobody foresaw is reported the same way,
 * exit 2; with `debug` the cause chain and stack follow on their own lines.
 */
export function reportFailure(command: string, error: unknown, debug: boolean): number {
  const known = exitCodeOf(error);
  const message = error instanceof Error ? error.message : String(error);
  const line = known === undefined ? `unexpected failure: ${message}${inboxHint(message)}` : message;
  console.error(`leasehold ${command}: ${oneLine(line)}${known === undefined && !debug ? " (--log-level debug shows the cause)" : ""}`);
  if (debug) {
    for (let e: unknown = error; e !== undefined; e = (e as { cause?: unknown }).cause) {
      console.error(e instanceof Error ? (e.stack ?? e.message) : JSON.stringify(e));
      if (!(e instanceof Error)) break;
    }
  }
  return known ?? EXIT.usage;
}

/** What to do when the server refused this connection's reply inbox: name the flag that sets it. */
export function inboxHint(message: string): string {
  const refused = /Permissions Violation for Subscription to "(_INBOX[^".]*)/.exec(message)?.[1];
  return refused === undefined
    ? ""
    : ` (this user may not receive replies under ${refused}: set --inbox-prefix to the prefix its permissions allow; --user <name> implies _INBOX_<name>, as leasehold nats-config writes)`;
}

/** Collapses a multi-line message into one line. */
export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").trim();
}
