/**
 * How every operator tool reaches the stream once connected to NATS: it opens
 * the prefix's event stream without creating anything. Failures become
 * {@link ToolConnectionError}s with a message an operator can act on.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { DEFAULTS } from "../config.ts";
import { JetStreamEventLog } from "../events/jetstream-event-log.ts";
import { type EventLog } from "../events/event-log.ts";
import { isValidPrefix, Subjects } from "../contract/subjects.ts";
import { ToolConnectionError, ToolUsageError } from "./errors.ts";

/** An open connection to NATS and the prefix's event stream. */
export interface ToolConnection {
  /** The servers connected to, for messages. */
  readonly url: string;
  readonly nc: NatsConnection;
  readonly subjects: Subjects;
  readonly log: EventLog;
}

/** The subjects of `prefix`, or a {@link ToolUsageError} when it is not a valid prefix. */
export function toolSubjects(prefix: string = DEFAULTS.prefix): Subjects {
  if (!isValidPrefix(prefix))
    throw new ToolUsageError(`--prefix: must be subject tokens of A-Z a-z 0-9 _ - separated by dots, got ${JSON.stringify(prefix)}`);
  return new Subjects(prefix);
}

/** Attaches to the prefix's event stream on `nc` (never creating it). `url` names the servers in messages. */
export async function attachTool(nc: NatsConnection, subjects: Subjects, url: string): Promise<ToolConnection> {
  try {
    const log = await JetStreamEventLog.attach(nc, {
      stream: subjects.eventStream,
      subjects: subjects.allEvents,
      dedupWindowMs: DEFAULTS.dedupWindowMs,
    });
    return { url, nc, subjects, log };
  } catch (e) {
    if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) {
      throw new ToolConnectionError(
        `no event stream ${subjects.eventStream} on ${url}: no leasehold service has run with --prefix ${subjects.prefix} there (check --prefix)`,
        { cause: e },
      );
    }
    const message = (e as Error).message;
    // A refusal is about this user's rights on this prefix; JetStream itself is there.
    const hint = /permissions violation/i.test(message)
      ? `this user may not read ${subjects.eventStream}: check --prefix, or the user's permissions (leasehold nats-config --prefix ${subjects.prefix})`
      : /jetstream (is )?not enabled/i.test(message)
        ? "no JetStream for this user's account: start nats-server with -js, or give the account `jetstream: enabled`"
        : "is JetStream enabled?";
    throw new ToolConnectionError(`cannot open the event stream ${subjects.eventStream} on ${url}: ${message} (${hint})`, { cause: e });
  }
}
