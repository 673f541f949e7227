/**
 * Following the event stream with an ordered consumer that this module, not
 * the client library, keeps alive. nats.js re-creates an ordered consumer by
 * itself, but slowly when the server it lived on dies: two missed heartbeats
 * at its default 15 s, and after a reconnect whose consumer look times out
 * (a stream leader being elected) a pause of up to its 30 s pull expiry.
 * Measured in the three-node leader-restart drill, that left followers
 * silent for seconds after the cluster was whole again, and every turn that
 * waited on them answered UNAVAILABLE. So the follower re-creates its
 * consumer itself, at once, from the next sequence, when the connection
 * reconnects or the consumer reports trouble (missed 1 s heartbeats, gone,
 * no responders), and gives a creation that does not answer only
 * {@link OPEN_DEADLINE_MS} before it tries again.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import {
  DeliverPolicy,
  type Consumer,
  type ConsumerMessages,
  type ConsumerNotification,
  type JetStreamClient,
  type JsMsg,
} from "@nats-io/jetstream";
import { ReconnectedError, type FollowOptions, type Following, type StoredMessage } from "./event-log.ts";
import { pause, withDeadline } from "./deadline.ts";

/** How long one consumer creation may take before the follower gives up on it and tries again (it takes milliseconds when a leader answers). */
export const OPEN_DEADLINE_MS = 2000;
/** The server's heartbeat to an idle consumer; two missed ones mean the consumer is gone. */
export const IDLE_HEARTBEAT_MS = 1000;
/** The longest pause between two creations that failed. */
const MAX_BACKOFF_MS = 500;

/** Consumer notifications after which the subscription will not deliver again by itself soon. */
const BROKEN: ReadonlySet<ConsumerNotification["type"]> = new Set([
  "heartbeats_missed",
  "consumer_not_found",
  "consumer_deleted",
  "stream_not_found",
  "no_responders",
]);

/** Where the follower reads from and how long its calls may take. */
export interface FollowerSource {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly stream: string;
  /** Deadline of calls other than a creation (stop, position looks), ms. */
  readonly opTimeoutMs: number;
  /** Whether a caught-up answer of this follower's server covers the leader's acknowledged messages (one replica). */
  readonly vouchesForLeader: boolean;
}

/**
 * Delivers every message of `filter` from `fromSeq` on, in order and at most
 * once each, across consumer re-creations; resolves once the first consumer
 * is created (rejects when it cannot be within {@link OPEN_DEADLINE_MS}).
 */
export async function followStream(
  source: FollowerSource,
  fromSeq: number,
  onMessage: (message: StoredMessage) => void,
  toStored: (m: JsMsg) => StoredMessage,
  options: FollowOptions & { readonly filter: string },
): Promise<Following> {
  const { filter } = options;
  let next = Math.max(1, fromSeq);
  let stopped = false;
  let consumer: Consumer | undefined;
  /** The last delivery onMessage got: its consumer and that consumer's delivery sequence. */
  let received: { consumer: string; dseq: number } | undefined;
  /** Why the current subscription is being dropped, when this module dropped it. */
  let dropped: Error | undefined;

  const open = async (): Promise<ConsumerMessages> => {
    received = undefined;
    dropped = undefined;
    const deadline = Math.min(source.opTimeoutMs, OPEN_DEADLINE_MS);
    consumer = await withDeadline(
      source.js.consumers.get(source.stream, {
        filter_subjects: filter, // a string: see JetStreamEventLog.readStream
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: next,
      }),
      deadline,
      `follow ${filter}`,
    );
    const messages = await withDeadline(
      consumer.consume({ max_messages: 1024, idle_heartbeat: IDLE_HEARTBEAT_MS }),
      deadline,
      `follow ${filter}`,
    );
    void watchNotifications(messages);
    return messages;
  };
  let messages: ConsumerMessages | undefined = await open();

  const close = async (): Promise<void> => {
    const current = messages;
    messages = undefined;
    if (current !== undefined) await withDeadline(current.close(), source.opTimeoutMs, "close").catch(() => undefined);
  };
  /** Ends the current subscription; the loop re-creates it from the next sequence. */
  const drop = (why: Error): void => {
    if (stopped || messages === undefined) return;
    dropped ??= why;
    void close();
  };
  async function watchNotifications(current: ConsumerMessages): Promise<void> {
    for await (const note of current.status()) {
      if (current !== messages) return;
      if (BROKEN.has(note.type)) drop(new Error(`the consumer reported ${note.type}`));
    }
  }
  // The server this connection reached may have been the one holding the consumer.
  const statuses = source.nc.status();
  void (async () => {
    for await (const status of statuses) if (status.type === "reconnect") drop(new ReconnectedError());
  })();

  const loop = (async () => {
    let backoffMs = 50;
    while (!stopped) {
      try {
        messages ??= await open();
        for await (const m of messages) {
          if (m.seq < next) continue; // a re-created consumer may repeat what was delivered
          next = m.seq + 1;
          backoffMs = 50;
          received = { consumer: m.info.consumer, dseq: m.info.deliverySequence };
          onMessage(toStored(m));
        }
        if (!stopped) throw dropped ?? new Error("the subscription ended");
      } catch (e) {
        if (stopped) break;
        options.onRestart?.(e as Error, next);
        await close();
        await pause(backoffMs);
        backoffMs = Math.min(2 * backoffMs, MAX_BACKOFF_MS);
      }
    }
  })();

  return {
    stop: async () => {
      stopped = true;
      // nats.js's status iterator leaves the connection's listeners on stop().
      (statuses as unknown as { stop(): void }).stop();
      await close();
      await withDeadline(loop, source.opTimeoutMs, "follower stop").catch(() => undefined);
    },
    restart: () => drop(new Error("the follower stalled")),
    vouchesForLeader: source.vouchesForLeader,
    caughtUp: async (timeoutMs) => {
      const current = consumer;
      if (current === undefined || messages === undefined) return false;
      const info = await withDeadline(current.info(false), timeoutMs, `position of follow ${filter}`);
      if (info.num_pending > 0) return false;
      const delivered = info.delivered.consumer_seq;
      // (A filtered consumer's delivered *stream* sequence may run ahead over messages it skipped: count deliveries instead.)
      return delivered === 0 || (received !== undefined && received.consumer === info.name && received.dseq >= delivered);
    },
  };
}
