/**
 * How every operator tool reaches the stream: it connects as `serve` does
 * (`--nats`, else `LEASEHOLD_NATS`, else `NATS_URL`, else the local server
 * `serve` would start on 127.0.0.1:4222) and opens the prefix's event stream
 * without creating anything. Failures become {@link ToolConnectionError}s
 * with a message an operator can act on.
 */
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { DEFAULTS } from "../config.ts";
import { isValidPrefix, JetStreamEventLog, Subjects, type EventLog } from "../events/index.ts";
import { ToolConnectionError, ToolUsageError } from "./errors.ts";

/** The address `serve` uses when it starts its own nats-server (nats.conf). */
export const LOCAL_NATS_URL = "nats://127.0.0.1:4222";

/** Connection flags as commander hands them over. */
export interface ConnectionFlags {
  readonly nats?: string | undefined;
  readonly prefix?: string | undefined;
}

/** An open connection to NATS and the prefix's event stream. */
export interface ToolConnection {
  readonly url: string;
  readonly nc: NatsConnection;
  readonly subjects: Subjects;
  readonly log: EventLog;
  close(): Promise<void>;
}

/** The NATS URL the flags and environment name. */
export function natsUrlOf(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env): string {
  return flags.nats ?? env.NATS_URL ?? LOCAL_NATS_URL;
}

/** Connects to NATS and attaches to the prefix's event stream (never creating it). */
export async function openTool(flags: ConnectionFlags, clientName: string): Promise<ToolConnection> {
  const prefix = flags.prefix ?? DEFAULTS.prefix;
  if (!isValidPrefix(prefix)) throw new ToolUsageError(`--prefix: must be subject tokens of A-Z a-z 0-9 _ - separated by dots, got ${JSON.stringify(prefix)}`);
  const subjects = new Subjects(prefix);
  const url = natsUrlOf(flags);
  let nc: NatsConnection;
  try {
    nc = await connect({ servers: url, name: clientName, maxReconnectAttempts: 0, timeout: 5000 });
  } catch (e) {
    throw new ToolConnectionError(`cannot connect to NATS at ${url}: ${(e as Error).message} (set --nats, LEASEHOLD_NATS or NATS_URL)`, { cause: e });
  }
  try {
    const log = await JetStreamEventLog.attach(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: DEFAULTS.dedupWindowMs });
    return { url, nc, subjects, log, close: () => nc.close() };
  } catch (e) {
    await nc.close();
    if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) {
      throw new ToolConnectionError(
        `no event stream ${subjects.eventStream} on ${url}: no leasehold service has run with --prefix ${prefix} there (check --prefix)`,
        { cause: e },
      );
    }
    throw new ToolConnectionError(`cannot open the event stream ${subjects.eventStream} on ${url}: ${(e as Error).message} (is JetStream enabled?)`, { cause: e });
  }
}

/**
 * Runs one tool: opens the connection, runs `body`, always closes, and turns
 * usage and connection errors into `report(message)` and exit code 2.
 * Resolves with the exit code `body` chose (or 2).
 */
export async function runTool(
  flags: ConnectionFlags,
  clientName: string,
  body: (connection: ToolConnection) => Promise<number>,
  report: (message: string) => void,
): Promise<number> {
  let connection: ToolConnection | undefined;
  try {
    connection = await openTool(flags, clientName);
    return await body(connection);
  } catch (e) {
    if (e instanceof ToolUsageError || e instanceof ToolConnectionError) {
      report(e.message);
      return e.exitCode;
    }
    report(`unexpected failure: ${(e as Error).stack ?? String(e)}`);
    return 2;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

/** Help text every tool adds: where it connects without --nats. */
export const CONNECTION_HELP = `\nWithout --nats (or LEASEHOLD_NATS, or NATS_URL) it connects to ${LOCAL_NATS_URL}, where \`leasehold serve\`'s own nats-server listens.`;
