/** Errors of the operator tools, each with the exit code its command ends with. */

/** A bad flag or flag combination: the command prints the message and exits 2. */
export class ToolUsageError extends Error {
  override readonly name = "ToolUsageError";
  readonly exitCode = 2;
}

/** NATS, the stream or the service could not be reached: the command prints the message and exits 2. */
export class ToolConnectionError extends Error {
  override readonly name = "ToolConnectionError";
  readonly exitCode = 2;
}
