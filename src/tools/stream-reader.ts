/**
 * Reading the whole event stream at the speed the server sends it, for
 * `replay` and `audit` (src/events/jetstream-scan.ts), with no header parse
 * per message (the tools need no message id).
 *
 * {@link logSource} gives the same interface over any EventLog (the
 * in-memory one in tests) through its per-message `readStream`.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { storedMillis } from "../events/stored-time.ts";
import { type EventLog, type StoredMessage } from "../events/event-log.ts";
import { scanStream } from "../events/jetstream-scan.ts";
import { ToolConnectionError } from "./errors.ts";
import { type Subjects } from "../contract/subjects.ts";

/** Which messages to read: sequence bounds (inclusive). */
export interface ReadRange {
  readonly fromSeq?: number | undefined;
  readonly toSeq?: number | undefined;
}

/**
 * Called with each message in stream order; returning false stops the read
 * before the next message.
 */
export type MessageVisitor = (message: StoredMessage) => boolean | void;

/** A stream that can be read from a sequence, in order. */
export interface StreamSource {
  /** The last sequence in the stream now (0 when empty). */
  lastSeq(): Promise<number>;
  /** Visits every message within `range` in order; resolves once the last was visited or the visitor stopped. */
  read(range: ReadRange, visit: MessageVisitor): Promise<void>;
}

/** Settings of {@link natsSource}. */
export interface NatsSourceOptions {
  /** A read that receives nothing for this long fails (default 10 s). */
  readonly stallMs?: number;
}

/** The event stream of `subjects` on `nc`, read by an ordered consumer in callback mode. */
export function natsSource(nc: NatsConnection, subjects: Subjects, options: NatsSourceOptions = {}): StreamSource {
  const js = jetstream(nc);
  const stallMs = options.stallMs ?? 10_000;
  const lastSeq = async () => {
    const jsm = await js.jetstreamManager();
    return (await jsm.streams.info(subjects.eventStream)).state.last_seq;
  };
  return {
    lastSeq,
    async read(range, visit) {
      const toSeq = range.toSeq ?? (await lastSeq());
      const scan = { fromSeq: range.fromSeq, toSeq, filter: subjects.allEvents };
      let visiting = false;
      try {
        await scanStream(
          js,
          subjects.eventStream,
          scan,
          (m) => {
            visiting = true;
            const goOn = visit({ seq: m.seq, subject: m.subject, payload: m.data, time: storedMillis(m) });
            visiting = false;
            return goOn;
          },
          stallMs,
          nc.closed(),
        );
      } catch (e) {
        // The visitor's own failure is the caller's; anything else is the read's: the server went, or stopped sending.
        if (visiting) throw e;
        throw new ToolConnectionError(`reading ${subjects.eventStream} failed: ${(e as Error).message}; run the command again`, {
          cause: e,
        });
      }
    },
  };
}

/** Any {@link EventLog} as a {@link StreamSource} (per message, through its readStream). */
export function logSource(log: EventLog): StreamSource {
  return {
    lastSeq: () => log.lastSeq(),
    async read(range, visit) {
      for await (const m of log.readStream({ fromSeq: range.fromSeq, toSeq: range.toSeq })) if (visit(m) === false) break;
    },
  };
}
