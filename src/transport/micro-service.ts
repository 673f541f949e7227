/**
 * A NATS service-framework ("micro", ADR-32) responder: `$SRV.PING`,
 * `$SRV.INFO` and `$SRV.STATS` for discovery and monitoring, plus endpoint
 * subscriptions in a queue group with per-endpoint request/error statistics.
 *
 * Written here rather than taken from `@nats-io/services`: that package exists
 * only as a prerelease (3.0.0-25) pinned to `@nats-io/nats-core` 3.0.0-50, so
 * beside transport-node 3.4 it installs a second nats-core whose types do not
 * accept our connection. The protocol is small and this keeps one nats-core.
 */
import { type Msg, type NatsConnection, type Subscription, nuid, headers as natsHeaders, type MsgHdrs } from "@nats-io/nats-core";
import { ERROR_MESSAGE_HEADER, ERROR_STATUS_HEADER, STATUS, errorBody } from "../contract/errors.ts";
import type { TurnResult } from "../actors/actor-runtime.ts";
import type { Logger } from "pino";

/** Identity of a service. */
export interface MicroServiceOptions {
  readonly name: string;
  readonly version: string;
  readonly description: string;
  /** Queue group shared by every instance's endpoints. */
  readonly queue: string;
  readonly metadata?: Record<string, string>;
  /** A subscription failed (e.g. a permission violation): told once per failure, never thrown. */
  readonly onError?: (error: Error, subject: string) => void;
  /** An answer could not be sent (e.g. over the server's max_payload); the asker got an INTERNAL error instead. */
  readonly onUnsent?: (error: Error, subject: string) => void;
  /** Whether a request's reply subject may be answered; a request whose reply may not is neither served nor answered. */
  readonly replyAllowed?: ReplyGuard;
  /** Told of each request refused for its reply subject. */
  readonly onRefusedReply?: RefusedReply;
}

/** Handles one request (`msg` for what else it carries, its headers); never throws (a throw is answered as a 500). */
export type EndpointHandler = (data: Uint8Array, msg: Msg) => Promise<EndpointResponse>;

interface EndpointStats {
  readonly name: string;
  readonly subject: string;
  num_requests: number;
  num_errors: number;
  last_error: string;
  processing_time: number;
}

const encoder = new TextEncoder();
const json = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));

/** One running service instance. */
export class MicroService {
  /** This instance's id, as `$SRV.PING` reports it. */
  readonly id = nuid.next();
  private readonly started = new Date().toISOString();
  private readonly endpoints: { stats: EndpointStats; sub: Subscription }[] = [];
  private readonly control: Subscription[] = [];
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: MicroServiceOptions,
  ) {
    for (const verb of ["PING", "INFO", "STATS"] as const) {
      for (const subject of [`$SRV.${verb}`, `$SRV.${verb}.${options.name}`, `$SRV.${verb}.${options.name}.${this.id}`]) {
        this.control.push(
          nc.subscribe(subject, {
            callback: (err, msg) => {
              if (err !== null) options.onError?.(err, subject);
              else if (this.mayAnswer(msg)) msg.respond(json(this.controlReply(verb)));
            },
          }),
        );
      }
    }
  }

  /**
   * A group of endpoints under one subject prefix, as the service framework
   * has them: `addGroup("p.v1.lock").addEndpoint("acquire", ...)` serves
   * `p.v1.lock.acquire`, named `lock_acquire` in `$SRV.INFO` and `$SRV.STATS`.
   */
  addGroup(prefix: string): { addEndpoint(name: string, handler: EndpointHandler): void } {
    const group = prefix.slice(prefix.lastIndexOf(".") + 1);
    return { addEndpoint: (name, handler) => this.addEndpoint(`${group}_${name}`, `${prefix}.${name}`, handler) };
  }

  /** Serves `subject` in the queue group with `handler`. */
  addEndpoint(name: string, subject: string, handler: EndpointHandler): void {
    const stats: EndpointStats = { name, subject, num_requests: 0, num_errors: 0, last_error: "", processing_time: 0 };
    const sub = this.nc.subscribe(subject, {
      queue: this.options.queue,
      callback: (err, msg) => {
        if (err !== null) this.options.onError?.(err, subject);
        else if (this.mayAnswer(msg)) void this.serve(msg, handler, stats);
      },
    });
    this.endpoints.push({ stats, sub });
  }

  /** Requests being handled right now. */
  get busy(): number {
    return this.inFlight;
  }

  /** Stops taking requests, answers those already delivered, then stops answering discovery. */
  async stop(): Promise<void> {
    await Promise.all(this.endpoints.map((e) => e.sub.drain()));
    if (this.inFlight > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await Promise.all(this.control.map((s) => s.drain()));
  }

  /** Whether `msg`'s reply subject may be published to; tells {@link MicroServiceOptions.onRefusedReply} when not. */
  private mayAnswer(msg: Msg): boolean {
    const { replyAllowed, onRefusedReply } = this.options;
    if (msg.reply === undefined || msg.reply === "" || replyAllowed === undefined || replyAllowed(msg.reply)) return true;
    onRefusedReply?.(msg.reply, msg.subject, "request");
    return false;
  }

  private async serve(msg: Msg, handler: EndpointHandler, stats: EndpointStats): Promise<void> {
    const start = performance.now();
    this.inFlight++;
    let response: EndpointResponse;
    try {
      response = await handler(msg.data, msg);
    } catch (e) {
      response = {
        ok: false,
        status: 500,
        message: (e as Error).message,
        body: { error: { code: "INTERNAL", message: (e as Error).message } },
      };
    }
    stats.num_requests++;
    // Nanoseconds, as the framework's stats count them; a float clock, not a BigInt per request.
    stats.processing_time += Math.round((performance.now() - start) * 1e6);
    try {
      this.answer(msg, response, stats);
    } catch (e) {
      // An answer the connection cannot carry (over the server's max_payload, which any client can make a
      // snapshot pass): the asker gets an error, and the process stays up.
      const message = `the answer could not be sent: ${(e as Error).message}`;
      this.options.onUnsent?.(e as Error, msg.subject);
      try {
        this.answer(msg, { ok: false, status: 500, message, body: { error: { code: "INTERNAL", message } } }, stats);
      } catch {
        // The connection is gone: the asker's timeout says so.
      }
    } finally {
      if (--this.inFlight === 0 && this.idleWaiters.length > 0) {
        for (const resolve of this.idleWaiters.splice(0)) resolve();
      }
    }
  }

  private answer(msg: Msg, response: EndpointResponse, stats: EndpointStats): void {
    if (response.ok) {
      msg.respond(json(response.body));
    } else {
      stats.num_errors++;
      stats.last_error = `${response.status}:${response.message}`;
      // Not known whether the command took effect: no answer, so the client's timeout says "not known" (never UNAVAILABLE).
      if (response.inDoubt !== true) msg.respond(json(response.body), { headers: replyHeaders(response) });
    }
  }

  private controlReply(verb: "PING" | "INFO" | "STATS"): Record<string, unknown> {
    const base = {
      name: this.options.name,
      id: this.id,
      version: this.options.version,
      metadata: this.options.metadata ?? {},
    };
    switch (verb) {
      case "PING":
        return { type: "io.nats.micro.v1.ping_response", ...base };
      case "INFO":
        return {
          type: "io.nats.micro.v1.info_response",
          ...base,
          description: this.options.description,
          endpoints: this.endpoints.map(({ stats }) => ({
            name: stats.name,
            subject: stats.subject,
            queue_group: this.options.queue,
            metadata: {},
          })),
        };
      case "STATS":
        return {
          type: "io.nats.micro.v1.stats_response",
          ...base,
          started: this.started,
          endpoints: this.endpoints.map(({ stats }) => ({
            ...stats,
            queue_group: this.options.queue,
            average_processing_time: stats.num_requests === 0 ? 0 : Math.round(stats.processing_time / stats.num_requests),
          })),
        };
    }
  }
}

/*
 * The one mapping of a turn's result onto the wire: the success body, or the
 * contract's error body with its status and message, which are also sent as
 * the `Nats-Service-Error-Code` and `Nats-Service-Error` headers.
 */

/**
 * What an endpoint answers, in wire terms. `inDoubt` marks an answer that
 * must not be sent: the command's event may still be stored, and the only
 * code the contract has for a failed write says nothing was changed.
 */
export type EndpointResponse =
  | { readonly ok: true; readonly body: unknown }
  | { readonly ok: false; readonly status: number; readonly message: string; readonly body: unknown; readonly inDoubt?: true };

/** The wire form of a turn's result. */
export function toResponse(result: TurnResult): EndpointResponse {
  if (result.ok) return { ok: true, body: result.reply };
  // A message may echo input (a JSON parse error quotes one UTF-16 unit, maybe half a pair): made well-formed
  // so that the header, which is UTF-8, says exactly what `error.message` says.
  const rejection = { ...result.rejection, message: result.rejection.message.toWellFormed() };
  const response = { ok: false, status: STATUS[rejection.code], message: rejection.message, body: errorBody(rejection) } as const;
  return result.unavailable?.inDoubt === true ? { ...response, inDoubt: true } : response;
}

/** Headers of a reply: the error headers for a failure (added to `into` when given), none for a success. */
export function replyHeaders(response: EndpointResponse, into?: MsgHdrs): MsgHdrs | undefined {
  if (response.ok) return into;
  const h = into ?? natsHeaders();
  h.set(ERROR_STATUS_HEADER, String(response.status));
  // Header values are one line; the full text is in the body.
  h.set(ERROR_MESSAGE_HEADER, response.message.replace(/[\r\n]+/g, " "));
  return h;
}

/*
 * Where a reply may go (docs/protocol.md, "Replies go only where a reply may
 * go"). A request names its reply subject, and the service publishes there
 * with its own rights: a reply aimed at `$JS.API.STREAM.DELETE.<stream>`
 * would delete the event stream, one aimed at `<prefix>.events.lock.<name>`
 * would write a message into a lock's history. So a reply subject in the
 * service's or NATS's own namespaces is refused before the request is
 * carried out, and so is one under the service's own inboxes (a forged
 * answer to a call the service itself is waiting on).
 */

/** The namespaces NATS keeps for itself: JetStream's API and acks, object and key-value stores, services, the system account. */
const NATS_NAMESPACES = ["$JS.", "$JSC.", "$O.", "$KV.", "$SRV.", "$SYS."] as const;

/** Tells whether a reply subject is one the service may publish to. */
export type ReplyGuard = (reply: string) => boolean;

/**
 * The guard of a service on `prefix` whose own connections take replies under
 * `ownInboxes` (their inbox prefixes): a reply subject may be anything but a
 * subject under one of those, under `<prefix>.`, or under NATS's namespaces.
 */
export function replyGuard(prefix: string, ownInboxes: readonly string[] = []): ReplyGuard {
  const reserved = [`${prefix}.`, ...NATS_NAMESPACES, ...ownInboxes.map((inbox) => `${inbox}.`)];
  const exact = new Set([prefix, ...NATS_NAMESPACES.map((ns) => ns.slice(0, -1)), ...ownInboxes]);
  return (reply) => !exact.has(reply) && !reserved.some((head) => reply.startsWith(head));
}

/** What a refused reply subject is reported to (a log line at warn and `leasehold_refused_replies_total`). */
export type RefusedReply = (reply: string, subject: string, path: "request" | "durable") => void;

/** Settings of {@link replyConfinement}. */
export interface ReplyConfinementOptions {
  readonly prefix: string;
  /** The inbox prefixes of the service's own connections (`_INBOX`, shared with clients, is left out). */
  readonly ownInboxes: readonly (string | undefined)[];
  /** False only in the tests that show the NATS server's own refusal behind this check. */
  readonly enabled: boolean;
  readonly logger: Logger;
  /** Counts a refusal (`leasehold_refused_replies_total`). */
  readonly count?: ((path: "request" | "durable") => void) | undefined;
  /** Fewest milliseconds between two warnings (a flood of such requests must not flood the log; default 1000). */
  readonly logPeriodMs?: number;
}

/** The guard and the refusal report of one service instance, as {@link MicroService} and the command consumer take them. */
export function replyConfinement(options: ReplyConfinementOptions): { replyAllowed?: ReplyGuard; onRefusedReply: RefusedReply } {
  const { logger, count, logPeriodMs = 1000 } = options;
  const ownInboxes = options.ownInboxes.filter((inbox): inbox is string => inbox !== undefined && inbox !== "_INBOX");
  let lastAt = -Infinity;
  let suppressed = 0;
  const onRefusedReply: RefusedReply = (reply, subject, path) => {
    count?.(path);
    const now = performance.now();
    if (now - lastAt < logPeriodMs) {
      suppressed++;
      return;
    }
    logger.warn({ reply, subject, path, suppressedSinceLast: suppressed }, "request refused: its reply subject is in a reserved namespace");
    [lastAt, suppressed] = [now, 0];
  };
  return options.enabled ? { replyAllowed: replyGuard(options.prefix, ownInboxes), onRefusedReply } : { onRefusedReply };
}
