/**
 * Input rules shared by every endpoint (docs/protocol.md, "Limits"): body size,
 * UTF-8, JSON object, no field the op does not define (1.2 strict bodies),
 * identifiers of at most 256 UTF-8 bytes that are valid Unicode, and the
 * optional `requestId`.
 */
import { z } from "zod";
import { badRequest, type Rejection } from "../contract/errors.ts";
import { IdListTails } from "./id-list-tails.ts";
import { firstUnknownField } from "./unknown-fields.ts";

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
