/** Telling a listener whenever a NATS connection has reconnected. */
import type { NatsConnection } from "@nats-io/nats-core";

/** Calls `listener` after each reconnect of `nc` until the returned function is called (or the connection closes). */
export function onReconnect(nc: NatsConnection, listener: () => void): () => void {
  const statuses = nc.status();
  void (async () => {
    for await (const status of statuses) if (status.type === "reconnect") listener();
  })();
  // nats.js's status iterator ends its loop (and leaves the connection's listeners) on stop().
  return () => (statuses as unknown as { stop(): void }).stop();
}
