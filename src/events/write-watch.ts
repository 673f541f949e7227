/**
 * Others' writes to a filter, counted from a core subscription on its
 * subjects. The server hands a published message to every subscriber while
 * it takes the message in, before the stream stores and acknowledges it; so
 * a write another instance had acknowledged before a request reached this
 * connection was counted before that request is read (one connection, read
 * in order). A read model that has seen no such write since its last look
 * at the stream holds everything the stream acknowledged: it needs no look.
 *
 * This instance's own appends are told apart by their reply subject (the
 * append pipe's inbox); they reach the read model on their acknowledgement.
 * Whatever could hide a write counts as one: a connection event (messages
 * may have been lost), an own append left in doubt, the subscription ending.
 */
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { withDeadline } from "./deadline.ts";
import type { WriteWatch } from "./event-log.ts";

/** What the watch needs of the log it serves. */
export interface WriteWatchSource {
  readonly nc: NatsConnection;
  /** Whether a message's reply subject marks it as one of this log's own appends. */
  ownsReply(reply: string): boolean;
  /** Own appends left in doubt so far (no acknowledgement in time); only grows. */
  doubts(): number;
}

/** Subscribes to `filter` and resolves once the server has the subscription (within `timeoutMs`). */
export async function watchWrites(source: WriteWatchSource, filter: string, timeoutMs: number): Promise<WriteWatch> {
  const watch = new SubscribedWriteWatch(source, filter);
  try {
    await withDeadline(source.nc.flush(), timeoutMs, `watch writes to ${filter}`);
  } catch (e) {
    watch.stop();
    throw e;
  }
  watch.confirm();
  return watch;
}

class SubscribedWriteWatch implements WriteWatch {
  private seen = 0;
  private confirmed = false;
  private stopped = false;
  private readonly subscription: Subscription;
  private readonly statuses: AsyncIterable<unknown> & { stop?(): void };

  constructor(
    private readonly source: WriteWatchSource,
    filter: string,
  ) {
    this.subscription = source.nc.subscribe(filter, {
      callback: (err, msg) => {
        if (err !== null || msg.reply === undefined || msg.reply === "" || !source.ownsReply(msg.reply)) this.seen++;
      },
    });
    const statuses = source.nc.status() as AsyncIterable<unknown> & { stop?(): void };
    this.statuses = statuses;
    void (async () => {
      for await (const status of statuses) {
        // Pings say nothing about delivery; anything else (a disconnect, a reconnect, an error) may have lost a message.
        if ((status as { type?: string }).type !== "ping") this.seen++;
      }
    })();
  }

  get changes(): number {
    return this.seen + this.source.doubts();
  }

  get live(): boolean {
    return this.confirmed && !this.stopped && !this.subscription.isClosed();
  }

  /** The server holds the subscription: from now on no write to the filter goes uncounted. */
  confirm(): void {
    this.confirmed = true;
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.statuses.stop?.();
    this.subscription.unsubscribe();
  }
}
