/**
 * The one way a request becomes a turn: an endpoint validates its body
 * against its schema, hands the typed request to its handler, and answers
 * with the handler's result. A handler that throws (a read of the stream that
 * failed) is answered `UNAVAILABLE`; nothing else escapes.
 */
import { z } from "zod";
import type { Arrival } from "../actors/actor-runtime.ts";
import { type Rejection, badRequest, forbidden, unauthenticated } from "../contract/errors.ts";
import { unavailableAfter, type TurnResult, isInDoubt, isUnavailable } from "../actors/actor-runtime.ts";
import { IdListTails } from "./id-list-tails.ts";
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { throttledWarn } from "./throttled-warn.ts";
import { toResponse, type EndpointResponse, type MicroService } from "./micro-service.ts";
export { SizedAnswer } from "./micro-service.ts";
import type { Subjects } from "../contract/subjects.ts";
import { Operators, accountOfPrincipal } from "../contract/operators.ts";

/** One `<kind>.<op>` endpoint, ready to serve. */
export interface Endpoint {
  readonly kind: string;
  readonly op: string;
  /** Answers from state without changing it: served on request only, never as a durable command. */
  readonly reads: boolean;
  /** An operator op (docs/protocol.md, "Principals"): with `--operators`, only those principals may call it. */
  readonly operatorOp: boolean;
  /** May wait for something other than CPU (a blocking acquire): it says so through {@link Delivery.onWait}. */
  readonly waits: boolean;
  /**
   * Runs a raw request body; never throws. The handler starts before this
   * returns (no await in between), so requests that reach an actor enter its
   * mailbox in the order they arrived.
   */
  run(data: Uint8Array, delivery?: Delivery): Promise<TurnResult>;
}

/** How a request was delivered. */
export interface Delivery {
  /** Set on durable commands only: when the command was first sent (epoch ms). Such a command must carry a `requestId`. */
  readonly requestedAt?: number;
  /** Who sent it, as NATS says (src/transport/principals.ts); `""` or absent: unknown. */
  readonly principal?: string;
  /** Whether the principal is an operator (`--operators` lists it): it may act on any holder's lease. */
  readonly operator?: boolean;
  /** Whether the principal may call operator ops: an operator, or anyone while `--operators` is unset (default true). */
  readonly mayOperate?: boolean;
  /** Told when the request starts waiting (see {@link Arrival.onWait}). */
  readonly onWait?: () => void;
  /** Whom per-client bounds count it against (see {@link Arrival.client}). */
  readonly client?: string | undefined;
}

/** Marks an endpoint that only reads. */
export const READS = { reads: true } as const;
/** Marks an op only `--operators` may call when it is set (docs/protocol.md, "Principals"). */
export const OPERATOR_OP = { operatorOp: true } as const;
/** Marks an op that may wait for something other than CPU (a blocking acquire). */
export const WAITS = { waits: true } as const;

/** What a handler does with a valid request. */
export type Handler<Req> = (request: Req, arrival: Arrival) => Promise<TurnResult>;

/** Builds an endpoint; `reads` marks one that only reads. */
export function endpoint<Req extends { requestId?: string | undefined }>(
  kind: string,
  op: string,
  schema: z.ZodType<Req>,
  handle: Handler<Req>,
  options: { reads?: boolean; operatorOp?: boolean; waits?: boolean } = {},
): Endpoint {
  const operatorOp = options.operatorOp ?? false;
  return {
    kind,
    op,
    reads: options.reads ?? false,
    operatorOp,
    waits: options.waits ?? false,
    run(data, delivery) {
      const request = delivery?.requestedAt === undefined ? parseRequest(schema, data) : parseDurable(schema, data);
      if (!request.ok) return Promise.resolve({ ok: false, rejection: request.rejection });
      const { requestId } = request.value;
      const principal = delivery?.principal ?? "";
      if (operatorOp && delivery?.mayOperate === false) return refuse(forbidden(`${kind}.${op} is an operator op`, principal));
      const arrival: Arrival = {
        requestId,
        requestedAt: delivery?.requestedAt,
        principal,
        operator: delivery?.operator ?? false,
        onWait: delivery?.onWait,
        client: delivery?.client,
        // Only a request that can be repeated needs telling from another with its id.
        fingerprint: requestId === undefined ? undefined : requestFingerprint(kind, op, request.value, principal),
      };
      try {
        return handle(request.value, arrival).catch(unavailableAfter);
      } catch (e) {
        return Promise.resolve(unavailableAfter(e));
      }
    },
  };
}

/** Builds an endpoint that only reads: it waits for `fresh` (its read model caught up with the stream), then answers `read`. */
export function readEndpoint<Req extends { requestId?: string | undefined }>(
  kind: string,
  op: string,
  schema: z.ZodType<Req>,
  fresh: () => Promise<unknown>,
  read: (request: Req) => unknown,
): Endpoint {
  return endpoint(
    kind,
    op,
    schema,
    async (request) => {
      await fresh();
      return answer(read(request));
    },
    READS,
  );
}

/**
 * A durable command's body, parsed once: a `requestId` is checked before the
 * schema, since without one a redelivery could not be told from a new command.
 */
function parseDurable<Req>(schema: z.ZodType<Req>, data: Uint8Array): ReturnType<typeof parseRequest<Req>> {
  const body = parseBody(data);
  if (!body.ok) return body;
  if (!requestId.safeParse(body.value.requestId).success) {
    return { ok: false, rejection: badRequest("requestId: required on durable commands (a string of 1 to 128 characters)") };
  }
  return validate(schema, body.value);
}

/** A refusal, as a handler answers it. */
export function refuse(rejection: Rejection): Promise<TurnResult> {
  return Promise.resolve({ ok: false, rejection });
}

/** A successful result carrying `reply`. */
export function answer(reply: unknown): TurnResult {
  return { ok: true, reply };
}

/*
 * Input rules shared by every endpoint (docs/protocol.md, "Limits"): body size,
 * UTF-8, JSON object, no field the op does not define (strict bodies),
 * identifiers of at most 256 UTF-8 bytes that are valid Unicode, and the
 * optional `requestId`.
 */

/** Largest accepted request body, bytes. */
export const MAX_BODY_BYTES = 64 * 1024;
/** Largest identifier, UTF-8 bytes. */
export const MAX_ID_BYTES = 256;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** An identifier that may be empty (`target`, `fp`, `model`). */
export const optionalId = z
  .string()
  .refine((s) => s.isWellFormed(), "is not valid Unicode (lone surrogate)")
  // A UTF-16 code unit takes at most 3 UTF-8 bytes, so short strings skip the byte count.
  .refine(
    (s) => s.length * 3 <= MAX_ID_BYTES || Buffer.byteLength(s, "utf8") <= MAX_ID_BYTES,
    `is longer than ${MAX_ID_BYTES} bytes in UTF-8`,
  );

/** An identifier that must not be empty (names, owners, hosts, routes, lease ids). */
export const requiredId = optionalId.refine((s) => s.length > 0, "must not be empty");

/** A positive whole number of milliseconds. */
export const positiveMs = z.number().int().positive();

/** The idempotency key any request may carry. */
export const requestId = z
  .string()
  .min(1)
  .max(128)
  .refine((s) => s.isWellFormed(), "is not valid Unicode (lone surrogate)");

/** The base every request schema extends. */
export const requestBase = z.object({ requestId: requestId.optional() });

/** Parses a request body into a JSON object, or says why it is not one. */
export function parseBody(data: Uint8Array): { ok: true; value: Record<string, unknown> } | { ok: false; rejection: Rejection } {
  if (data.length > MAX_BODY_BYTES) {
    return { ok: false, rejection: badRequest(`body is ${data.length} bytes, more than ${MAX_BODY_BYTES}`) };
  }
  let value: unknown;
  try {
    value = JSON.parse(data.length === 0 ? "{}" : utf8.decode(data));
  } catch (e) {
    return { ok: false, rejection: badRequest(`body is not UTF-8 JSON: ${(e as Error).message}`) };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, rejection: badRequest("body must be a JSON object") };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

/** Is `s` a valid non-empty identifier (what {@link requiredId} accepts)? */
function isRequiredId(s: unknown): s is string {
  return (
    typeof s === "string" &&
    s.length > 0 &&
    s.isWellFormed() &&
    (s.length * 3 <= MAX_ID_BYTES || Buffer.byteLength(s, "utf8") <= MAX_ID_BYTES)
  );
}

/** Schemas whose identifier list is looked for at the end of the raw body (see {@link IdListTails}). */
const listTails = new WeakMap<z.ZodType, IdListTails>();
/** Schemas with a fast path: it returns what the schema would for a valid body, or undefined for zod to say what is wrong. */
const fastPaths = new WeakMap<z.ZodType, (body: Record<string, unknown>) => unknown>();

/**
 * Gives an object schema a fast path for its list of identifiers `key`
 * (`route.acquire`'s candidates): a valid list is checked in one plain loop
 * and the other fields by zod. zod's per-item checks of a 1,000-host list
 * cost more than parsing the body; anything the loop does not accept goes
 * through the whole schema, so a refusal says exactly what it said before.
 */
export function withIdListFastPath<S extends z.ZodObject>(schema: S, key: string): S {
  const rest = schema.omit({ [key]: true } as never);
  // Strict: a head with a field the op does not define goes the whole way, which refuses it by name.
  listTails.set(schema, new IdListTails(key, rest.strict()));
  fastPaths.set(schema, (body) => {
    const list = body[key];
    if (!Array.isArray(list) || !list.every(isRequiredId)) return undefined;
    const others = rest.safeParse(body);
    // The body was parsed for this request alone, so its list is frozen in place (as zod's readonly() freezes its copy).
    return others.success ? { ...others.data, [key]: Object.freeze(list) } : undefined;
  });
  return schema;
}

/** The fields each object schema defines (looked up once per schema). */
const definedFields = new WeakMap<z.ZodType, ReadonlySet<string>>();

function fieldsOf(schema: z.ZodType): ReadonlySet<string> | undefined {
  let fields = definedFields.get(schema);
  if (fields === undefined && schema instanceof z.ZodObject) {
    fields = new Set(Object.keys(schema.shape));
    definedFields.set(schema, fields);
  }
  return fields;
}

/** Longest field name quoted in a refusal's message (the details carry it whole). */
const MAX_QUOTED_FIELD = 64;

/** The refusal of a body with a field its op does not define: BAD_REQUEST with details `{field}`. */
export function unknownFieldRejection(field: string, defined: ReadonlySet<string>): Rejection {
  const quoted = JSON.stringify(field.length > MAX_QUOTED_FIELD ? `${field.slice(0, MAX_QUOTED_FIELD)}…` : field);
  return {
    code: "BAD_REQUEST",
    message: `${quoted}: unknown field (this op takes ${defined.size === 0 ? "no field" : [...defined].join(", ")})`,
    details: { field },
  };
}

/**
 * Validates a parsed body against a request schema. A field the schema does
 * not define is refused first, naming the first such field in the body's
 * order (`raw`, the body's bytes, settles the order when JSON.parse moved
 * an integer-like key ahead).
 */
export function validate<T>(
  schema: z.ZodType<T>,
  body: Record<string, unknown>,
  raw?: Uint8Array,
): { ok: true; value: T } | { ok: false; rejection: Rejection } {
  const defined = fieldsOf(schema);
  if (defined !== undefined) {
    const unknown = firstUnknownField(body, defined, raw);
    if (unknown !== undefined) return { ok: false, rejection: unknownFieldRejection(unknown, defined) };
  }
  const fast = fastPaths.get(schema)?.(body);
  if (fast !== undefined) return { ok: true, value: fast as T };
  const result = schema.safeParse(body);
  if (result.success) return { ok: true, value: result.data };
  const first = result.error.issues[0];
  const where = first === undefined || first.path.length === 0 ? "request" : first.path.join(".");
  return { ok: false, rejection: badRequest(`${where}: ${first?.message ?? "invalid"}`) };
}

/** Parses and validates a request body in one step: the request, or the refusal to send. */
export function parseRequest<T>(schema: z.ZodType<T>, data: Uint8Array): { ok: true; value: T } | { ok: false; rejection: Rejection } {
  const tails = listTails.get(schema);
  if (tails !== undefined && data.length <= MAX_BODY_BYTES) {
    const known = tails.match(data);
    if (known !== undefined) return { ok: true, value: known as T };
  }
  const body = parseBody(data);
  if (!body.ok) return body;
  const request = validate(schema, body.value, data);
  if (request.ok) tails?.learn(data, request.value);
  return request;
}

/**
 * Strict request bodies (docs/protocol.md, "Strict request bodies"): the
 * first field of a body that its op does not define, in the order the body
 * writes its fields.
 *
 * `JSON.parse` keeps the order of an object's keys with one exception: keys
 * that look like array indices ("0", "42") come first, in ascending order.
 * So the order of the parsed object is the body's order unless an unknown
 * key starts with a digit; only then are the body's top-level keys read
 * again from its text, by a small scanner (a refusal, and a rare one: off
 * the hot path, which costs one set lookup per field).
 */

/**
 * The first key of `body` that is not in `defined`, in the body's order, or
 * undefined when there is none. `raw` is the body's bytes (valid UTF-8 JSON,
 * already parsed into `body`); without it the parsed order is taken.
 */
export function firstUnknownField(body: Record<string, unknown>, defined: ReadonlySet<string>, raw?: Uint8Array): string | undefined {
  for (const key in body) {
    if (defined.has(key)) continue;
    if (raw === undefined || !startsWithDigit(key)) return key;
    for (const written of topLevelKeys(utf8.decode(raw))) if (!defined.has(written)) return written;
    return key;
  }
  return undefined;
}

function startsWithDigit(key: string): boolean {
  const c = key.charCodeAt(0);
  return c >= 48 && c <= 57;
}

/** The keys of the JSON object `text`, in the order it writes them (duplicates included). */
export function* topLevelKeys(text: string): Generator<string> {
  let i = skipSpace(text, 0);
  if (text[i] !== "{") return;
  i = skipSpace(text, i + 1);
  while (text[i] === '"') {
    const end = endOfString(text, i);
    yield JSON.parse(text.slice(i, end)) as string;
    // Past the colon, then past the value to the comma or the closing brace.
    i = endOfValue(text, skipSpace(text, end) + 1);
    if (text[i] !== ",") return;
    i = skipSpace(text, i + 1);
  }
}

/** The index of the first character at or after `i` that is not JSON whitespace. */
function skipSpace(text: string, i: number): number {
  while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
  return i;
}

/** The index just past the string literal that starts at `i`. */
function endOfString(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 92)
      j++; // a backslash escapes the next character
    else if (c === 34) return j + 1;
  }
  return text.length;
}

/** The index of the comma or closing brace that ends the value starting at `i` (nesting and strings skipped). */
function endOfValue(text: string, i: number): number {
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const c = text[j];
    if (c === '"') j = endOfString(text, j) - 1;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      if (depth === 0) return j;
      depth--;
    } else if (c === "," && depth === 0) return j;
  }
  return text.length;
}

/*
 * What makes two requests with one `requestId` the same request
 * (docs/protocol.md, "A requestId names one request"): the same op, the same
 * body once parsed (key order, spacing and escapes do not count) and the same
 * principal's account: a durable command proves no more than its account, so
 * a retry by the other path is the same request. The fingerprint rides in the message id of the event the
 * request appends, so every instance, and this one after a restart, can tell
 * a retry (the first answer) from a reuse (`REQUEST_ID_REUSED`).
 */

/** The fingerprint of one request: 16 hex digits of SHA-256 over its op, principal's account and parsed body. */
export function requestFingerprint(kind: string, op: string, request: unknown, principal = ""): string {
  return (
    createHash("sha256")
      // (No principal, the default deployment's every request: nothing to take apart.)
      .update(`${kind}.${op}\n${principal === "" ? "" : accountOfPrincipal(principal)}\n${JSON.stringify(request, sortedKeys)}`)
      .digest("hex")
      .slice(0, 16)
  );
}

/** A JSON replacer that writes every object's keys in one order (`{a, b}` and `{b, a}` are one body). */
function sortedKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const sorted: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) sorted[k] = (value as Record<string, unknown>)[k];
  return sorted;
}

/*
 * The one way in for every command, wherever it arrives: a request through
 * the service framework and a durable command from the command stream both
 * go through {@link endpointServer}, which runs the endpoint (validation once,
 * then the use case), counts the command, logs a refusal and maps the result
 * onto the wire.
 */

/** What a metrics registry takes from the commands served (prom-client's in src/http fits it). */
export interface CommandObserver {
  commandFinished(kind: string, op: string, outcome: string, seconds: number): void;
}

/** A command carried out: its result, and the same in wire terms. */
export interface Served {
  readonly result: TurnResult;
  readonly response: EndpointResponse;
}

/**
 * Serves one raw command body on `endpoint`; never throws. Like
 * {@link Endpoint.run}, the handler starts before the first await, so
 * commands reach each actor in the order they arrived.
 */
export type ServeEndpoint = (endpoint: Endpoint, data: Uint8Array, delivery?: Delivery) => Promise<Served>;

/** Settings of {@link endpointServer}. */
export interface EndpointServerOptions {
  readonly logger: Logger;
  readonly observer?: CommandObserver | undefined;
  /** Fewest milliseconds between two warnings of UNAVAILABLE answers (default 5000). */
  readonly unavailableLogPeriodMs?: number;
  /** `--operators` (default: none, so anyone may call operator ops). */
  readonly operators?: Operators;
  /** `--require-principal`: a request whose principal is unknown is refused UNAUTHENTICATED before anything else. */
  readonly requirePrincipal?: boolean;
}

/** The serve function of one service instance (its UNAVAILABLE warnings are throttled together). */
export function endpointServer(options: EndpointServerOptions): ServeEndpoint {
  const { logger, observer, unavailableLogPeriodMs = 5000, requirePrincipal = false } = options;
  const operators = options.operators ?? new Operators([]);
  // Without --operators anyone may call operator ops, and nobody without a principal is one: no lookup per request.
  const open = operators.open;
  const warnUnavailable = throttledWarn(logger, "answered UNAVAILABLE", unavailableLogPeriodMs);
  const warnInDoubt = throttledWarn(logger, "left unanswered: the command's event may still be stored", unavailableLogPeriodMs);
  return async (endpoint, data, delivery = {}) => {
    const started = performance.now();
    const principal = delivery.principal ?? "";
    const operator = principal !== "" && !open && operators.includes(principal);
    const result: TurnResult =
      requirePrincipal && principal === ""
        ? { ok: false, rejection: unauthenticated() }
        : await endpoint.run(data, {
            requestedAt: delivery.requestedAt,
            principal,
            operator,
            mayOperate: operator || open,
            onWait: delivery.onWait,
            client: delivery.client,
          });
    observer?.commandFinished(endpoint.kind, endpoint.op, outcomeOf(result), (performance.now() - started) / 1000);
    // An outage at thousands of requests a second must not flood the log: at most one line per period, the cause in it.
    if (!result.ok && isInDoubt(result)) warnInDoubt({ kind: endpoint.kind, op: endpoint.op, cause: result.rejection.message });
    else if (!result.ok && isUnavailable(result))
      warnUnavailable({ kind: endpoint.kind, op: endpoint.op, cause: result.rejection.message });
    else if (!result.ok) {
      logger.debug(
        { kind: endpoint.kind, op: endpoint.op, code: result.rejection.code, message: result.rejection.message },
        "command refused",
      );
    }
    return { result, response: toResponse(result) };
  };
}

/** The `outcome` of a command for metrics: `ok`, its error code, or `unavailable`. */
export function outcomeOf(result: TurnResult): string {
  if (result.ok) return "ok";
  return isUnavailable(result) ? "unavailable" : result.rejection.code;
}

/**
 * Mounts every endpoint on the NATS service, each kind's in its group
 * (`<prefix>.v1.<kind>`): a request's bytes go straight to `serve`, with the
 * principal the service framework read from it.
 */
export function mountEndpoints(micro: MicroService, subjects: Subjects, endpoints: readonly Endpoint[], serve: ServeEndpoint): void {
  const groups = new Map<string, ReturnType<MicroService["addGroup"]>>();
  for (const endpoint of endpoints) {
    let group = groups.get(endpoint.kind);
    if (group === undefined) groups.set(endpoint.kind, (group = micro.addGroup(subjects.commandGroup(endpoint.kind))));
    group.addEndpoint(
      endpoint.op,
      endpoint.waits
        ? // An op that may wait says when it starts to, so that fair admission gives its place to the next request.
          async (data, msg, principal, client) =>
            (await serve(endpoint, data, { principal, client, onWait: () => micro.waits(msg) })).response
        : async (data, _msg, principal) => (await serve(endpoint, data, principal === "" ? NO_PRINCIPAL : { principal })).response,
    );
  }
}

const NO_PRINCIPAL: Delivery = { principal: "" };
