/**
 * Reading the whole event stream at the speed the server sends it, for
 * `replay` and `audit`. An ordered consumer in callback mode hands over each
 * message as the client parses it out of a socket read, so the tool folds a
 * read's worth of messages in one go, with no promise, iterator step or
 * header parse per message (the tools need no message id); the next read of
 * the socket waits until the fold is done, which is the backpressure.
 *
 * {@link logSource} gives the same interface over any EventLog (the
 * in-memory one in tests) through its per-message `readStream`.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import { storedMillis, type EventLog, type StoredMessage } from "../events/index.ts";
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
      const fromSeq = Math.max(1, range.fromSeq ?? 1);
      const toSeq = range.toSeq ?? (await lastSeq());
      if (toSeq < fromSeq) return;
      const consumer = await js.consumers.get(subjects.eventStream, {
        filter_subjects: subjects.allEvents, // a string: see JetStreamEventLog.readStream
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: fromSeq,
      });
      if ((await consumer.info(true)).num_pending === 0) return;
      let finish!: (error?: Error) => void;
      const done = new Promise<void>((resolve, reject) => (finish = (error) => (error === undefined ? resolve() : reject(error))));
      let over = false;
      let received = 0;
      const end = (error?: Error) => {
        if (over) return;
        over = true;
        finish(error);
      };
      const messages = await consumer.consume({
        max_messages: 4096,
        callback: (m) => {
          if (over) return;
          received++;
          const seq = m.seq;
          if (seq > toSeq) return end();
          let goOn: boolean | void;
          try {
            goOn = visit({ seq, subject: m.subject, payload: m.data, time: storedMillis(m) });
          } catch (e) {
            return end(e as Error);
          }
          if (goOn === false || seq >= toSeq || m.info.pending === 0) end();
        },
      });
      // Bounded: a read that stops moving (server gone, stream deleted) fails instead of hanging.
      let seen = -1;
      const watchdog = setInterval(() => {
        if (received === seen) end(new Error(`the stream read stalled at ${received} messages for ${stallMs} ms`));
        seen = received;
      }, stallMs);
      try {
        await done;
      } finally {
        clearInterval(watchdog);
        await messages.close().catch(() => undefined);
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
