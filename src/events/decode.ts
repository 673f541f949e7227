/**
 * The decoding of what is read back from the stream. Everything read back is
 * validated: a message that does not parse never reaches an `evolve` as if it
 * were an event. Every kind's event schemas are read here (each kind's
 * `events.ts`, which imports nothing above src/events).
 */
import { z } from "zod";
import { lockEventSchemas } from "../lock/events.ts";
import { proxyEventSchemas } from "../proxy/events.ts";
import { hostEventSchemas } from "../host/events.ts";
import { routeEventSchemas } from "../route/events.ts";
import { sessionEventSchemas } from "../session/events.ts";
import { instant } from "./fields.ts";
import { compileSchema, type Accepts } from "./compiled-schemas.ts";
import type { EventEnvelope, HistoryEntry } from "./envelope.ts";

const envelopeSchema = z.object({
  type: z.string().min(1),
  v: z.literal(1),
  at: instant,
  kind: z.enum(["proxy", "host", "route", "lock", "session"]),
  id: z.string(),
  requestId: z.string().min(1).max(128).optional(),
  by: z.string().min(1).max(1024).optional(),
  data: z.record(z.string(), z.unknown()),
});

/** Every event type leasehold writes, with the schema of its `data`. */
const dataSchemas: Readonly<Record<string, z.ZodType>> = {
  ...lockEventSchemas,
  ...proxyEventSchemas,
  ...hostEventSchemas,
  ...routeEventSchemas,
  ...sessionEventSchemas,
};

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The envelope and every type's data schema compiled to plain predicates (null: that schema stays with zod). */
const acceptsEnvelope = compileSchema(envelopeSchema);
const acceptsData: ReadonlyMap<string, Accepts | null> = new Map(
  Object.entries(dataSchemas).map(([type, schema]) => [type, compileSchema(schema)]),
);

/**
 * The event in `json` when the compiled schemas accept it, as zod would
 * return it (the envelope's keys in schema order, unknown ones dropped);
 * null when they do not, and zod must judge. `data` is `json`'s own object
 * rather than zod's copy of it: the same keys and values, in the same order.
 */
function acceptedEvent(json: unknown): EventEnvelope | null {
  if (acceptsEnvelope === null || !acceptsEnvelope(json)) return null;
  const env = json as EventEnvelope;
  const accepts = acceptsData.get(env.type);
  if (accepts === undefined) return null;
  if (accepts === null ? !dataSchemas[env.type]!.safeParse(env.data).success : !accepts(env.data)) return null;
  const { type, v, at, kind, id, requestId, by, data } = env;
  if (by !== undefined)
    return requestId === undefined ? { type, v, at, kind, id, by, data } : { type, v, at, kind, id, requestId, by, data };
  return requestId === undefined ? { type, v, at, kind, id, data } : { type, v, at, kind, id, requestId, data };
}

/**
 * Decodes and validates one stored message; never throws. Valid events take
 * the compiled schemas' path; anything they do not accept is judged by zod
 * ({@link decodeParsed}), so both accept and reject the same messages.
 */
export function decodeEvent(payload: Uint8Array, seq: number, msgId?: string): HistoryEntry {
  let json: unknown;
  try {
    json = JSON.parse(utf8.decode(payload));
  } catch (e) {
    return { seq, unparsable: true, reason: `not JSON: ${syntaxMessage(e as Error)}`, msgId };
  }
  const event = acceptedEvent(json);
  return event === null ? decodeParsed(json, seq, msgId) : { seq, event, msgId };
}

/**
 * JSON.parse's message without the "(line 1 column 2)" that newer V8s (Node
 * 22 and later) add: the reason is folded into a lock's state, so it must read
 * the same whichever Node replays the stream.
 */
function syntaxMessage(e: Error): string {
  return e.message.replace(/ \(line \d+ column \d+\)$/, "");
}

/** Validates a parsed message with the zod schemas alone (the reference {@link decodeEvent} agrees with); never throws. */
export function decodeParsed(json: unknown, seq: number, msgId?: string): HistoryEntry {
  const env = envelopeSchema.safeParse(json);
  if (!env.success) return { seq, unparsable: true, reason: `bad envelope: ${z.prettifyError(env.error)}`, msgId };
  // Own keys only: a type named like an Object.prototype member ("toString") is unknown, not a crash.
  const schema = Object.hasOwn(dataSchemas, env.data.type) ? dataSchemas[env.data.type] : undefined;
  if (schema === undefined) return { seq, unparsable: true, reason: `unknown event type ${env.data.type}`, msgId };
  const data = schema.safeParse(env.data.data);
  if (!data.success) {
    return { seq, unparsable: true, reason: `bad ${env.data.type} data: ${z.prettifyError(data.error)}`, msgId };
  }
  return { seq, event: env.data, msgId };
}
