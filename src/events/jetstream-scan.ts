/**
 * Reading a range of the stream at the speed the server sends it: an ordered
 * consumer in callback mode hands over each message as the client parses it
 * out of a socket read, so the reader handles a read's worth of messages in
 * one go, with no promise or iterator step per message; the next read of the
 * socket waits until the callback returns, which is the backpressure. For
 * whole-stream reads (the tools, a start's backlog), not for following.
 */
import { DeliverPolicy, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";

/** What to read: sequence bounds (inclusive) and a subject filter. */
export interface ScanRange {
  readonly fromSeq?: number | undefined;
  readonly toSeq: number;
  readonly filter: string;
}

/**
 * Calls `visit` with every message of `stream` within `range`, in order;
 * `visit` returning false (or throwing) stops the read. A read that receives
 * nothing for `stallMs` fails (server gone, stream deleted); so does one
 * whose connection closes (`closed`, its `closed()`), at once.
 */
export async function scanStream(
  js: JetStreamClient,
  stream: string,
  range: ScanRange,
  visit: (m: JsMsg) => boolean | void,
  stallMs: number,
  closed?: Promise<void | Error>,
): Promise<void> {
  const fromSeq = Math.max(1, range.fromSeq ?? 1);
  const toSeq = range.toSeq;
  if (toSeq < fromSeq) return;
  const consumer = await js.consumers.get(stream, {
    filter_subjects: range.filter, // a string: see JetStreamEventLog.readStream
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
        goOn = visit(m);
      } catch (e) {
        return end(e as Error);
      }
      if (goOn === false || seq >= toSeq || m.info.pending === 0) end();
    },
  });
  void closed?.then((err) => end(new Error(`the NATS connection closed${err ? ` (${err.message})` : ""} after ${received} messages`)));
  // Bounded: a read that stops moving fails instead of hanging.
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
}
