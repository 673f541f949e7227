/**
 * Reads a whole event stream as the audit consumes it, with a deadline: an
 * ordered consumer from the first sequence to the last one present when the
 * read began.
 */
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { StoredMessage } from "../../src/events/event-log.ts";

/** Every message of `stream`, in order; throws when it cannot be read within `timeoutMs`. */
export async function readWholeStream(servers: readonly string[], stream: string, timeoutMs = 30_000): Promise<StoredMessage[]> {
  const nc = await connect({ servers: [...servers], name: "chaos-stream-reader", maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  const deadline = Date.now() + timeoutMs;
  try {
    const jsm = await jetstreamManager(nc, { timeout: 5000 });
    const info = await jsm.streams.info(stream);
    const last = info.state.last_seq;
    const messages: StoredMessage[] = [];
    if (info.state.messages === 0) return messages;
    const consumer = await jetstream(nc, { timeout: 5000 }).consumers.get(stream);
    const iterator = await consumer.consume({ max_messages: 1000 });
    const timer = setTimeout(() => void iterator.stop(), Math.max(0, deadline - Date.now()));
    try {
      for await (const m of iterator) {
        messages.push({
          seq: m.seq,
          subject: m.subject,
          payload: m.data,
          time: Math.floor(Number(m.info.timestampNanos) / 1e6),
          msgId: m.headers?.get("Nats-Msg-Id") || undefined,
        });
        if (m.seq >= last) break;
      }
    } finally {
      clearTimeout(timer);
      await iterator.close().catch(() => undefined);
    }
    const got = messages.at(-1)?.seq ?? 0;
    if (got < last) throw new Error(`read ${stream} up to ${got} of ${last} within ${timeoutMs} ms`);
    return messages;
  } finally {
    await nc.close();
  }
}
