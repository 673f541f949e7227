/**
 * Durable commands (docs/protocol.md, "Durable commands (JetStream)"): commands
 * published to `<prefix>.cmd.<kind>.<op>` are kept in the work-queue stream
 * `<P>_COMMANDS` while no service runs, and carried out exactly once by one
 * durable pull consumer shared by every instance.
 *
 * Each message goes through the same way in (`serve-endpoint.ts`: validation,
 * metrics, logging, reply mapping), hence the same actor turn, as a request. It is acknowledged only after the turn appended its event or
 * refused it, so a service killed in between sees it again; the required
 * `requestId` makes that second turn a no-op that still sends the reply.
 */
import { lookOrCreate } from "../events/jetstream-event-log.ts";
import type { NatsConnection } from "@nats-io/nats-core";
import { headers as natsHeaders, nanos } from "@nats-io/nats-core";
import {
  AckPolicy,
  DeliverPolicy,
  RetentionPolicy,
  StorageType,
  jetstreamManager,
  type ConsumerMessages,
  type JetStreamManager,
  type JsMsg,
} from "@nats-io/jetstream";
import type { Logger } from "pino";
import { isUnavailable } from "../actors/actor-runtime.ts";
import type { Subjects } from "../contract/subjects.ts";
import type { Endpoint } from "./endpoint.ts";
import { replyHeaders, toResponse, type EndpointResponse } from "./micro-service.ts";
import { badRequest } from "../contract/errors.ts";
import type { ServeEndpoint, Served } from "./endpoint.ts";
import { PRESENT_FOR_MS, type RefusedReply, type ReplyGuard, type RequestClients } from "./micro-service.ts";
import { OP_TIMEOUT_MS, pause, withDeadline } from "../events/deadline.ts";
import { MAX_HEADER_BYTES, headerBlockOf, headerBytes, headerValues, isReplySubject, quotedSubject } from "./client-text.ts";

/** Deadline of each call that sets up the subscription. */

/** The durable consumer every instance shares. */
export const COMMAND_CONSUMER = "leasehold-commands";
/** The longest `<kind>.<op>` part of a subject that names no durable command which its error's subject repeats. */
const MAX_ERROR_TAIL_BYTES = 256;
/** Deliveries of a command whose handling throws before it is dropped (see CommandConsumer.failed). */
const MAX_FAILED_DELIVERIES = 5;
/** Durable commands one instance works on at once unless told otherwise. */
const DEFAULT_MAX_IN_FLIGHT = 64;
/** Header naming where a durable command's reply goes. */
export const REPLY_TO_HEADER = "Leasehold-Reply-To";

/** Settings of the command consumer. */
export interface CommandConsumerOptions {
  /** Holds the command stream and its consumer; reports durable command errors. */
  readonly nc: NatsConnection;
  /** Publishes `Leasehold-Reply-To` answers (default `nc`): the connection whose user may publish only to reply prefixes. */
  readonly replyNc?: NatsConnection;
  readonly subjects: Subjects;
  readonly endpoints: readonly Endpoint[];
  /** The instance's one way in, shared with its request/reply endpoints. */
  readonly serve: ServeEndpoint;
  readonly logger: Logger;
  readonly dedupWindowMs: number;
  readonly replicas: number;
  /** Commands this instance works on at once (default {@link DEFAULT_MAX_IN_FLIGHT}). */
  readonly maxInFlight?: number;
  /**
   * How long JetStream waits for an ack before redelivering (default 30 s):
   * well above a slow turn (an append times out after 5 s and is retried
   * once, plus catch-up), and the longest a dead instance's commands wait.
   */
  readonly ackWaitMs?: number;
  /** Whether a `Leasehold-Reply-To` subject may be published to; a command naming one that may not is refused as invalid. */
  readonly replyAllowed?: ReplyGuard;
  /** Told of each command refused for its `Leasehold-Reply-To`. */
  readonly onRefusedReply?: RefusedReply;
  /**
   * The account layout (`--principals nats-request-info`): a command arrives
   * as `<prefix>.cmd.<account>.<kind>.<op>`, the account put there by the
   * server's import (an export's account token position), which is its principal.
   */
  readonly accountToken?: boolean;
  /**
   * Fair admission beside the request/reply clients: while any of them sent
   * a request within the last {@link PRESENT_FOR_MS}, the durable commands
   * count as one more client and have their share of `maxActive` served at
   * once (at least one); alone, up to `maxInFlight`. Absent: always up to
   * `maxInFlight`.
   */
  readonly fairShare?: {
    readonly clients: Readonly<RequestClients>;
    readonly maxActive: number;
    /** The admission's clock (default `performance.now()`). */
    readonly now?: () => number;
  };
}

/** Consumes the command stream until stopped. */
export class CommandConsumer {
  private messages: ConsumerMessages | undefined;
  private stopping = false;
  private inFlight = 0;
  /** Commands in flight that are not parked waiting for a lock (those no longer hold a place of the fair share). */
  private active = 0;
  private readonly maxInFlight: number;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private readonly byKey = new Map<string, Endpoint>();
  private readonly encoder = new TextEncoder();

  private constructor(
    private readonly jsm: JetStreamManager,
    private readonly options: CommandConsumerOptions,
  ) {
    this.maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    // Reads have no place on the durable path.
    for (const e of options.endpoints) if (!e.reads) this.byKey.set(`${e.kind}.${e.op}`, e);
  }

  /** Creates the stream and the durable consumer when missing, and starts consuming. */
  static async start(options: CommandConsumerOptions): Promise<CommandConsumer> {
    const jsm = await jetstreamManager(options.nc);
    const { subjects } = options;
    await lookOrCreate(
      () => jsm.streams.info(subjects.commandStream),
      () =>
        jsm.streams.add({
          name: subjects.commandStream,
          subjects: [subjects.allDurableCommands],
          retention: RetentionPolicy.Workqueue,
          storage: StorageType.File,
          num_replicas: options.replicas,
          duplicate_window: nanos(options.dedupWindowMs),
        }),
    );
    const maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    const ackWait = nanos(options.ackWaitMs ?? 30_000);
    await lookOrCreate(
      () => jsm.consumers.info(subjects.commandStream, COMMAND_CONSUMER),
      () =>
        jsm.consumers.add(subjects.commandStream, {
          durable_name: COMMAND_CONSUMER,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          ack_wait: ackWait,
          // Bounds what all instances together hold unacknowledged.
          max_ack_pending: Math.max(1024, maxInFlight * 8),
        }),
    );
    const existing = await jsm.consumers.info(subjects.commandStream, COMMAND_CONSUMER);
    if (existing.config.ack_wait !== ackWait) {
      // The consumer is shared: the instance started last sets the ack wait.
      await jsm.consumers.update(subjects.commandStream, COMMAND_CONSUMER, { ack_wait: ackWait });
      options.logger.info({ ackWaitMs: options.ackWaitMs }, "updated the durable command consumer's ack wait");
    }
    const consumer = new CommandConsumer(jsm, options);
    await consumer.consume();
    return consumer;
  }

  /** Commands waiting in the stream and commands delivered but not yet acknowledged. */
  async lag(): Promise<{ pending: number; unacknowledged: number; redelivered: number }> {
    const info = await this.jsm.consumers.info(this.options.subjects.commandStream, COMMAND_CONSUMER);
    return { pending: info.num_pending, unacknowledged: info.num_ack_pending, redelivered: info.num_redelivered };
  }

  /** Stops pulling, then waits for the commands in hand to be carried out and acknowledged. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.messages?.close();
    await this.loop;
    while (this.inFlight > 0) await new Promise<void>((resolve) => (this.wake = resolve));
  }

  private async consume(): Promise<void> {
    const { maxInFlight } = this;
    const open = async (): Promise<ConsumerMessages> => {
      const consumer = await withDeadline(
        this.jsm.jetstream().consumers.get(this.options.subjects.commandStream, COMMAND_CONSUMER),
        OP_TIMEOUT_MS,
        "open the durable command consumer",
      );
      return withDeadline(consumer.consume({ max_messages: maxInFlight }), OP_TIMEOUT_MS, "consume durable commands");
    };
    this.messages = await open();
    this.loop = (async () => {
      let backoffMs = 50;
      while (!this.stopping) {
        try {
          this.messages ??= await open();
          for await (const m of this.messages) {
            backoffMs = 50;
            // handle() puts the command into its actor's mailbox before its first
            // await, so commands reach each actor in stream order.
            this.inFlight++;
            this.active++;
            let parked = false;
            const onWait = () => {
              // A blocking acquire parked in its lock's queue waits for a release, not for CPU: its place goes to the next.
              parked = true;
              this.active--;
              this.wake?.();
            };
            void this.handle(m, onWait)
              .catch((err: unknown) => this.failed(m, err))
              .finally(() => {
                this.inFlight--;
                if (!parked) this.active--;
                this.wake?.();
              });
            // Bound the commands this instance holds, and take turns with the request/reply clients: wait for a place before pulling more.
            while (!this.mayStart()) await new Promise<void>((resolve) => (this.wake = resolve));
          }
          if (!this.stopping) throw new Error("the durable command subscription ended");
        } catch (err) {
          if (this.stopping) break;
          // The server restarted or the consumer's leader moved: pull again from a fresh subscription.
          this.options.logger.warn({ err }, "durable command consumer interrupted; re-subscribing");
          const current = this.messages;
          this.messages = undefined;
          await current?.close().catch(() => undefined);
          await pause(backoffMs);
          backoffMs = Math.min(2 * backoffMs, 2000);
        }
      }
    })();
  }

  /** Whether another command may start now (see {@link CommandConsumerOptions.fairShare}). */
  private mayStart(): boolean {
    if (this.inFlight >= this.maxInFlight) return false;
    const share = this.options.fairShare;
    if (share === undefined) return true;
    const { clients, maxActive } = share;
    const now = share.now?.() ?? performance.now();
    if (clients.count === 0 || now - clients.lastAt > PRESENT_FOR_MS) return true;
    return this.active < Math.max(1, Math.floor(maxActive / (clients.count + 1)));
  }

  private async handle(m: JsMsg, onWait: () => void): Promise<void> {
    const { tail, principal } = this.kindOpOf(m.subject);
    // Read from the block's bytes, never by the client's parser, which throws on a malformed block (see client-text.ts).
    const headers = headerBlockOf(m);
    const unread = headers !== undefined && "unread" in headers ? headers.unread : undefined;
    let replyTo = headers === undefined || "unread" in headers ? undefined : headerValues(headers, REPLY_TO_HEADER)[0] || undefined;
    const endpoint = this.byKey.get(tail);
    const { replyAllowed } = this.options;
    let refused: Served | undefined;
    if (unread === "too large") {
      refused = invalid(`headers: ${headerBytes(m)} bytes, more than ${MAX_HEADER_BYTES}`);
    } else if (unread === "malformed") {
      refused = invalid("headers: not a well-formed NATS header block (a NATS/1.0 line, Name: value lines, a blank line)");
    } else if (replyTo !== undefined && !isReplySubject(replyTo)) {
      this.options.onRefusedReply?.(quotedSubject(replyTo), m.subject, "durable");
      refused = invalid(
        `${REPLY_TO_HEADER}: ${quotedSubject(replyTo)} is not a subject a reply may go to (one literal subject, no wildcard or whitespace)`,
      );
      replyTo = undefined;
    } else if (replyTo !== undefined && replyAllowed !== undefined && !replyAllowed(replyTo)) {
      this.options.onRefusedReply?.(replyTo, m.subject, "durable");
      refused = invalid(`${REPLY_TO_HEADER}: ${replyTo} is in the service's or NATS's own namespace; a reply may not go there`);
      replyTo = undefined;
    }
    // A durable command's delivery carries when it was first sent; the endpoint then requires its requestId.
    const { result, response }: Served =
      refused ??
      (endpoint === undefined
        ? notDurable(tail)
        : await this.options.serve(endpoint, m.data, {
            requestedAt: Number(BigInt(m.info.timestampNanos) / 1_000_000n),
            principal,
            onWait,
          }));
    if (!result.ok && isUnavailable(result)) {
      // Retryable: leave it to a later delivery rather than answer (its requestId makes a redelivery safe).
      const delayMs = Math.max(100, result.unavailable?.retryAfterMs ?? 1000);
      this.options.logger.warn({ subject: m.subject, seq: m.seq, delayMs, message: result.rejection.message }, "durable command postponed");
      m.nak(delayMs);
      return;
    }
    if (!result.ok && result.rejection.code === "BAD_REQUEST") {
      this.publish(this.errorSubject(tail), response, m);
      this.options.logger.info(
        { subject: m.subject, seq: m.seq, message: result.rejection.message },
        "durable command rejected as invalid",
      );
    }
    if (replyTo !== undefined) this.publish(replyTo, response, m, this.options.replyNc);
    // Ack only now, after the event is appended (or the command refused);
    // ackAck waits for the server to confirm, so a lost ack is retried by redelivery.
    try {
      await m.ackAck();
    } catch (err) {
      this.options.logger.warn(
        { err, subject: m.subject, seq: m.seq },
        "ack of a durable command was not confirmed; it may be redelivered (a no-op)",
      );
    }
  }

  /**
   * A command whose handling threw: left unacknowledged, it is redelivered
   * after the ack wait; after {@link MAX_FAILED_DELIVERIES} it is dropped with
   * its error on the error subject, so no command that always fails holds a
   * place of the consumer's bounded unacknowledged ones for ever (1,024 of
   * them stopped every client's durable commands).
   */
  private failed(m: JsMsg, err: unknown): void {
    const { logger } = this.options;
    const deliveries = m.info.deliveryCount;
    if (deliveries < MAX_FAILED_DELIVERIES) {
      logger.error({ err, subject: m.subject, seq: m.seq, deliveries }, "durable command failed; it is delivered again after the ack wait");
      return;
    }
    logger.error({ err, subject: m.subject, seq: m.seq, deliveries }, "durable command failed on every delivery; dropped");
    const message = `not carried out: handling it failed on ${deliveries} deliveries (${(err as Error)?.message ?? String(err)})`;
    const result = { ok: false, rejection: { code: "UNAVAILABLE", message } } as const;
    try {
      this.publish(this.errorSubject(this.kindOpOf(m.subject).tail), toResponse(result), m);
      m.term(message.slice(0, 256));
    } catch (e) {
      logger.error({ err: e, subject: m.subject, seq: m.seq }, "a failed durable command could not be dropped");
    }
  }

  /**
   * Where a refused command's error goes: `<prefix>.cmd-errors.<kind>.<op>`, or `.invalid` when its subject names
   * no durable command and is no short literal one (4,000 bytes of it made the server drop the connection).
   */
  private errorSubject(tail: string): string {
    const fits = this.byKey.has(tail) || (Buffer.byteLength(tail) <= MAX_ERROR_TAIL_BYTES && isReplySubject(tail));
    return this.options.subjects.commandError(fits ? tail : "invalid");
  }

  /** The `<kind>.<op>` of a command's subject, and the principal the subject proves (its account token in the account layout, else ""). */
  private kindOpOf(subject: string): { tail: string; principal: string } {
    const tail = this.options.subjects.durableKindOp(subject) ?? subject;
    if (this.options.accountToken !== true) return { tail, principal: "" };
    const dot = tail.indexOf(".");
    return dot > 0 ? { tail: tail.slice(dot + 1), principal: tail.slice(0, dot) } : { tail, principal: "" };
  }

  private publish(subject: string, response: EndpointResponse, m: JsMsg, nc = this.options.nc): void {
    const h = natsHeaders();
    h.set("Leasehold-Command-Subject", m.subject);
    h.set("Leasehold-Command-Seq", String(m.seq));
    replyHeaders(response, h);
    nc.publish(subject, this.encoder.encode(JSON.stringify(response.body)), { headers: h });
  }
}

/** The answer to a command on a subject that names no mutating endpoint. */
function notDurable(tail: string): Served {
  return invalid(`${tail} is not a durable command (mutating <kind>.<op> only)`);
}

/** A durable command refused as invalid (BAD_REQUEST), before it reaches an endpoint. */
function invalid(message: string): Served {
  const result = { ok: false, rejection: badRequest(message) } as const;
  return { result, response: toResponse(result) };
}
