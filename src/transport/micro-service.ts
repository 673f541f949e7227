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
import { FairQueue, type QueueRefusal } from "./fair-queue.ts";
import { principalOf, type PrincipalSource } from "./principals.ts";
import { headerBlockOf } from "./client-text.ts";
import { throttledWarn } from "./throttled-warn.ts";

/** Identity of a service. */
export interface MicroServiceOptions {
  readonly name: string;
  readonly version: string;
  readonly description: string;
  /** Queue group shared by every instance's endpoints. */
  readonly queue: string;
  /** The connection discovery (`$SRV.*`) is answered on (default the endpoints'): anyone may flood it. */
  readonly controlNc?: NatsConnection;
  readonly metadata?: Record<string, string>;
  /** A subscription failed (e.g. a permission violation): told once per failure, never thrown. */
  readonly onError?: (error: Error, subject: string) => void;
  /** An answer could not be sent (e.g. over the server's max_payload); the asker got an INTERNAL error instead. */
  readonly onUnsent?: (error: Error, subject: string) => void;
  /** Handling a message threw (a defect, not the subscription's failure): the message is dropped, the service goes on. */
  readonly onThrown?: (error: Error, subject: string) => void;
  /** Whether a request's reply subject may be answered; a request whose reply may not is neither served nor answered. */
  readonly replyAllowed?: ReplyGuard;
  /** Told of each request refused for its reply subject. */
  readonly onRefusedReply?: RefusedReply;
  /** Where a request's principal comes from (src/transport/principals.ts; default `off`: every principal is `""`). */
  readonly principals?: PrincipalSource;
  /** Fair admission (docs/operations.md, "Fair admission"); absent: every request is served as it arrives. */
  readonly admission?: AdmissionOptions;
}

/**
 * Handles one request (`msg` for what else it carries) from `principal`
 * (who NATS says sent it, `""` when unknown) and `client` (whom per-client
 * bounds count it against, {@link clientOf}); never throws (a throw is
 * answered as a 500).
 */
export type EndpointHandler = (data: Uint8Array, msg: Msg, principal: string, client: string) => Promise<EndpointResponse>;

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

/**
 * Fair admission: while one client alone sends requests, or fewer than
 * `maxActive` are being served, each is served as it arrives. Past that,
 * while several clients send, each may have its share of `maxActive` served
 * at once (`maxActive` divided among the clients seen in the last
 * {@link PRESENT_FOR_MS}, at least one each); a request past its client's
 * share waits in that client's queue, and the queues are served in rotation
 * (src/transport/fair-queue.ts). So a client with 64 requests in flight puts
 * about `maxActive` requests' work, not 64, in front of another's one.
 */
export interface AdmissionOptions {
  readonly maxActive: number;
  /** Requests that may wait, all clients together; one client may have a tenth of them. */
  readonly maxQueued: number;
  /** Told of each request answered UNAVAILABLE without being carried out, and why. */
  readonly onShed?: (client: string, reason: ShedReason) => void;
  /** The monotonic clock in ms (default `performance.now()`; tests pass their own). */
  readonly now?: () => number;
}

/** Why a request was answered UNAVAILABLE without being carried out. */
export type ShedReason = QueueRefusal | "waited-too-long";

/** A client counts among those sharing `maxActive` this long after its last request. */
export const PRESENT_FOR_MS = 100;
/**
 * The most requests served at once, whoever sent them: a burst of thousands
 * sent without waiting (from one client, or from as many reply inboxes)
 * would otherwise all be in service at once, with memory for each and every
 * other request behind them; past it they wait, and past the queue's bounds
 * they are refused.
 */
export const MAX_SERVED = 256;
/** How long a request may wait for its turn; past it, it is answered UNAVAILABLE, not carried out (its asker may have given up). */
export const MAX_TURN_WAIT_MS = 1000;

/**
 * The request/reply clients as the latest admission counted them, for work
 * that comes in another way and should take its turn among them (durable
 * commands, src/transport/command-consumer.ts). Plain fields, written by
 * every admission and read without a call into this file.
 */
export interface RequestClients {
  /** Clients sharing `maxActive` at the latest admission. */
  count: number;
  /** When (the admission's clock) the latest request was admitted. */
  lastAt: number;
}

/**
 * A whole-table answer (`route.snapshot`, `proxy.list`), built
 * only as it is sent, with a lower bound of its encoded size: one that cannot
 * fit in the server's max_payload is refused unbuilt. Built, 40,000 route
 * leases took 110-190 ms of this thread for an answer NATS then refused.
 */
export class SizedAnswer {
  constructor(
    /** A lower bound of its JSON's bytes. */
    readonly minBytes: number,
    /** What to read instead when it does not fit (e.g. "route.get, one route at a time"). */
    readonly instead: string,
    private readonly build: () => unknown,
  ) {}

  /** What JSON.stringify encodes: the answer, built now. */
  toJSON(): unknown {
    return this.build();
  }
}

/** One client's requests at this instance. */
interface ClientState {
  /** Its key ({@link clientOf}): in the queue, the shed report and the handler's arguments. */
  readonly key: string;
  /** Requests of this client being served (a blocking acquire parked in its queue no longer counts). */
  active: number;
  /** Requests of this client waiting for their turn. */
  queued: number;
  /** When its last request arrived. */
  lastSeen: number;
}

/** A request waiting for its turn. */
interface Waiting {
  readonly msg: Msg;
  readonly handler: EndpointHandler;
  readonly stats: EndpointStats;
  readonly principal: string;
  /** Its client (kept while it waits: a client with requests waiting is never swept). */
  readonly client: ClientState;
  readonly since: number;
}

/**
 * The client a request is from when NATS names no principal: the
 * connection its reply inbox belongs to. Clients take replies on
 * `<inbox prefix>.<connection token>.<request token>` (nats.js, the Go and
 * Python clients), so all but the last token name the connection; a reply
 * subject of two tokens or fewer (a client's own inbox per request) is its
 * own client. A client that draws a new inbox per request is, to this, many
 * clients: only a principal the server states holds against that.
 */
export function replyClient(msg: Msg): string {
  const reply = msg.reply ?? "";
  const last = reply.lastIndexOf(".");
  return last > 0 && reply.indexOf(".") < last ? reply.slice(0, last) : reply;
}

/** The client `msg` is from: its principal when NATS names one, else its reply inbox's connection ({@link replyClient}). */
function clientOf(msg: Msg, principal: string): string {
  // A space is in no subject, so a principal never names the same client as a reply inbox.
  return principal === "" ? replyClient(msg) : `principal ${principal}`;
}

/**
 * Reports requests answered UNAVAILABLE for load: each is counted, and a
 * line at warn says so at most every `periodMs` with how many since the last
 * and the client of the latest.
 */
export function shedReport(
  logger: Logger,
  count: ((reason: string) => void) | undefined,
  periodMs = 5000,
): (client: string, reason: string) => void {
  const warn = throttledWarn(
    logger,
    "requests answered UNAVAILABLE for load (--max-active-requests, --max-queued-requests); client: the latest one's",
    periodMs,
  );
  return (client, reason) => {
    count?.(reason);
    warn({ client, reason });
  };
}

/** One running service instance. */
export class MicroService {
  /** This instance's id, as `$SRV.PING` reports it. */
  readonly id = nuid.next();
  private readonly started = new Date().toISOString();
  private readonly endpoints: { stats: EndpointStats; sub: Subscription }[] = [];
  private readonly control: Subscription[] = [];
  /** Requests taken and not yet answered, waiting ones included. */
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];
  /** Fair admission: the clients seen lately, the client each served request counts against, and the queues. */
  private readonly clients = new Map<string, ClientState>();
  private readonly servedFor = new Map<Msg, ClientState>();
  private readonly waiting: FairQueue<Waiting> | undefined;
  /** `waiting.size`, kept here: read for every answered request, and a call into fair-queue.ts would put that file on the request path. */
  private queued = 0;
  private sweptAt = -Infinity;
  /** Answers the requests that waited past {@link MAX_TURN_WAIT_MS} while places stay taken (set while any wait). */
  private expiryTimer: ReturnType<typeof setTimeout> | undefined;
  /** `$SRV.*` answers as last encoded (see {@link answerControl}). */
  private readonly controlAnswers = new Map<"PING" | "INFO" | "STATS", Uint8Array>();
  private readonly shedAnswers = new Map<ShedReason, ReturnType<MicroService["shedAnswer"]>>();
  private readonly now: () => number;
  /** The clients the latest admission counted (see {@link RequestClients}). */
  readonly requestClients: RequestClients = { count: 0, lastAt: -Infinity };

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: MicroServiceOptions,
  ) {
    const admission = options.admission;
    this.now = admission?.now ?? (() => performance.now());
    if (admission !== undefined) this.waiting = new FairQueue(Math.max(1, Math.floor(admission.maxQueued / 10)), admission.maxQueued);
    for (const verb of ["PING", "INFO", "STATS"] as const) {
      for (const subject of [`$SRV.${verb}`, `$SRV.${verb}.${options.name}`, `$SRV.${verb}.${options.name}.${this.id}`]) {
        this.control.push(
          (options.controlNc ?? nc).subscribe(subject, {
            callback: guarded(subject, options, (msg) => {
              if (this.mayAnswer(msg)) this.answerControl(verb, msg);
            }),
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
      callback: guarded(subject, this.options, (msg) => {
        if (this.mayAnswer(msg)) this.admit(msg, handler, stats, this.principalOf(msg));
      }),
    });
    this.endpoints.push({ stats, sub });
    this.controlAnswers.clear();
  }

  /**
   * `msg`, being served, now waits for something other than CPU (a blocking
   * acquire parked in its queue): it no longer counts against `maxActive`.
   */
  waits(msg: Msg): void {
    this.finished(msg);
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

  /** Who NATS says sent `msg` (src/transport/principals.ts): `""` unless the deployment says the server writes it. */
  private principalOf(msg: Msg): string {
    const source = this.options.principals ?? "off";
    // Read from the block's bytes: a block too large, or not well formed, names no one (see client-text.ts).
    return source === "off" ? "" : principalOf(headerBlockOf(msg), source);
  }

  /** Serves `msg` now, or queues it behind its client's earlier requests when that client has its share served. */
  private admit(msg: Msg, handler: EndpointHandler, stats: EndpointStats, principal: string): void {
    this.inFlight++;
    const key = clientOf(msg, principal);
    if (this.options.admission === undefined) {
      void this.serve(msg, handler, stats, principal, key);
      return;
    }
    const now = this.now();
    if (this.sweep(now) && this.queued > 0) this.admitWaiting();
    let client = this.clients.get(key);
    if (client === undefined) this.clients.set(key, (client = { key, active: 0, queued: 0, lastSeen: now }));
    else client.lastSeen = now;
    this.requestClients.count = this.clients.size;
    this.requestClients.lastAt = now;
    if (client.queued === 0 && this.mayServe(client)) {
      this.start(msg, handler, stats, principal, client);
      return;
    }
    const refused = this.waiting!.push(key, { msg, handler, stats, principal, client, since: now });
    if (refused !== undefined) {
      this.shed(msg, stats, key, refused);
    } else {
      client.queued++;
      this.queued++;
      this.expiryTimer ??= this.armExpiry();
    }
  }

  /**
   * Every quarter of {@link MAX_TURN_WAIT_MS} while requests wait, answers
   * UNAVAILABLE those that waited longer: a turn that does not come (every
   * place held by requests that take seconds, e.g. appends while NATS is
   * away) must not leave their askers without an answer until they give up.
   */
  private armExpiry(): ReturnType<typeof setTimeout> {
    const timer = setTimeout(() => {
      this.expiryTimer = undefined;
      const now = this.now();
      for (const expired of this.waiting!.expire((w) => now - w.since > MAX_TURN_WAIT_MS)) {
        expired.client.queued--;
        this.queued--;
        this.shed(expired.msg, expired.stats, expired.client.key, "waited-too-long");
      }
      if (this.queued > 0) this.expiryTimer = this.armExpiry();
    }, MAX_TURN_WAIT_MS / 4);
    // Never what keeps the process alive: stop() waits for the requests themselves.
    timer.unref();
    return timer;
  }

  /**
   * Whether a request of `client` may be served now: never past
   * {@link MAX_SERVED} in all; else while fewer than
   * `maxActive` are served, anyone's (no place is left idle); past that,
   * a client's under its share of `maxActive` (all of it while it is alone).
   */
  private mayServe(client: ClientState): boolean {
    if (this.servedFor.size >= MAX_SERVED) return false;
    const { maxActive } = this.options.admission!;
    const clients = this.clients.size;
    return this.servedFor.size < maxActive || clients <= 1 || client.active < Math.max(1, Math.floor(maxActive / clients));
  }

  private start(msg: Msg, handler: EndpointHandler, stats: EndpointStats, principal: string, client: ClientState): void {
    client.active++;
    this.servedFor.set(msg, client);
    void this.serve(msg, handler, stats, principal, client.key);
  }

  /** `msg` no longer counts against its client's share (answered, or waiting for something other than CPU). */
  private finished(msg: Msg): void {
    const client = this.servedFor.get(msg);
    if (client === undefined) return;
    this.servedFor.delete(msg);
    client.active--;
    if (this.queued > 0) this.admitWaiting();
  }

  /**
   * Forgets, at most once per {@link PRESENT_FOR_MS}, the clients with
   * nothing served or waiting and no request for that long: the others'
   * shares grow. Tells whether it forgot any.
   */
  private sweep(now: number): boolean {
    if (now - this.sweptAt <= PRESENT_FOR_MS) return false;
    this.sweptAt = now;
    const before = this.clients.size;
    for (const [key, client] of this.clients) {
      if (client.active === 0 && client.queued === 0 && now - client.lastSeen > PRESENT_FOR_MS) this.clients.delete(key);
    }
    return this.clients.size < before;
  }

  /** Serves waiting requests, clients in rotation, while their clients are under their shares. */
  private admitWaiting(): void {
    const now = this.now();
    this.sweep(now);
    for (;;) {
      const next = this.waiting!.next((key) => this.mayServe(this.clients.get(key)!));
      if (next === undefined) return;
      next.client.queued--;
      this.queued--;
      if (now - next.since > MAX_TURN_WAIT_MS) this.shed(next.msg, next.stats, next.client.key, "waited-too-long");
      else this.start(next.msg, next.handler, next.stats, next.principal, next.client);
    }
  }

  /** Answers UNAVAILABLE a request that was not carried out for load. */
  private shed(msg: Msg, stats: EndpointStats, client: string, reason: ShedReason): void {
    this.options.admission!.onShed?.(client, reason);
    let answer = this.shedAnswers.get(reason);
    if (answer === undefined) this.shedAnswers.set(reason, (answer = this.shedAnswer(reason)));
    stats.num_errors++;
    stats.last_error = answer.lastError;
    this.statsChanged();
    try {
      msg.respond(answer.data, { headers: answer.headers });
    } catch {
      // The connection is gone: the asker's timeout says so.
    }
    this.settled();
  }

  /**
   * The UNAVAILABLE answer for `reason`, encoded once: a flood is mostly
   * answered this way, and encoding its body and headers anew for each of a
   * million requests was about half the service's CPU while it was flooded.
   */
  private shedAnswer(reason: ShedReason): { data: Uint8Array; headers: MsgHdrs; lastError: string } {
    const message =
      reason === "waited-too-long"
        ? `this instance is overloaded: the request waited over ${MAX_TURN_WAIT_MS} ms for its turn and was not carried out; retry later`
        : reason === "client-full"
          ? `this instance is overloaded: ${this.waiting!.perClient} requests from this client are waiting already; this one was not carried out; retry later`
          : `this instance is overloaded: ${this.waiting!.total} requests are waiting already; this one was not carried out; retry later`;
    const response = { ok: false, status: 503, message, body: errorBody({ code: "UNAVAILABLE", message }) } as const;
    return { data: json(response.body), headers: replyHeaders(response)!, lastError: `503:${message}` };
  }

  private async serve(msg: Msg, handler: EndpointHandler, stats: EndpointStats, principal: string, client: string): Promise<void> {
    const start = performance.now();
    let response: EndpointResponse;
    try {
      response = await handler(msg.data, msg, principal, client);
    } catch (e) {
      response = {
        ok: false,
        status: 500,
        message: (e as Error).message,
        body: { error: { code: "INTERNAL", message: (e as Error).message } },
      };
    }
    stats.num_requests++;
    this.statsChanged();
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
      this.finished(msg);
      this.settled();
    }
  }

  /** One request answered: tells {@link stop} when it was the last. */
  private settled(): void {
    if (--this.inFlight === 0 && this.idleWaiters.length > 0) {
      for (const resolve of this.idleWaiters.splice(0)) resolve();
    }
  }

  private answer(msg: Msg, response: EndpointResponse, stats: EndpointStats): void {
    if (response.ok) {
      const body = response.body;
      const maxPayload = this.nc.info?.max_payload;
      if (body instanceof SizedAnswer && maxPayload !== undefined && body.minBytes > maxPayload) {
        throw new Error(
          `it would take at least ${body.minBytes} bytes, over the server's max_payload of ${maxPayload}; read ${body.instead}`,
        );
      }
      msg.respond(json(body));
    } else {
      stats.num_errors++;
      stats.last_error = `${response.status}:${response.message}`;
      // Not known whether the command took effect: no answer, so the client's timeout says "not known" (never UNAVAILABLE).
      if (response.inDoubt !== true) msg.respond(json(response.body), { headers: replyHeaders(response) });
    }
  }

  /** Drops the encoded `$SRV.STATS` answer: the next one asked is encoded anew. */
  private statsChanged(): void {
    this.controlAnswers.delete("STATS");
  }

  /**
   * Answers a discovery request with its answer encoded once while nothing
   * changed: `$SRV.*` is not admitted (each is answered as it comes), and
   * encoding the statistics of every endpoint anew for each of a flood of
   * `$SRV.STATS` requests held the service for seconds.
   */
  private answerControl(verb: "PING" | "INFO" | "STATS", msg: Msg): void {
    let data = this.controlAnswers.get(verb);
    if (data === undefined) this.controlAnswers.set(verb, (data = json(this.controlReply(verb))));
    msg.respond(data);
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

/**
 * A subscription callback that never throws: a throw inside one reaches the
 * NATS client's protocol reader, which then stops reading the connection
 * without closing it, and every request after it goes unanswered. What
 * throws is told to `onThrown`, and the service goes on (a client must not
 * be able to stop it by what it sends).
 */
function guarded(
  subject: string,
  on: Pick<MicroServiceOptions, "onError" | "onThrown">,
  take: (msg: Msg) => void,
): (err: Error | null, msg: Msg) => void {
  return (err, msg) => {
    try {
      if (err !== null) on.onError?.(err, subject);
      else take(msg);
    } catch (e) {
      on.onThrown?.(e instanceof Error ? e : new Error(String(e)), subject);
    }
  };
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
  const warn = throttledWarn(logger, "request refused: its reply subject is in a reserved namespace", logPeriodMs);
  const onRefusedReply: RefusedReply = (reply, subject, path) => {
    count?.(path);
    warn({ reply, subject, path });
  };
  return options.enabled ? { replyAllowed: replyGuard(options.prefix, ownInboxes), onRefusedReply } : { onRefusedReply };
}
