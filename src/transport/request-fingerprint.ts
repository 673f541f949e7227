/**
 * What makes two requests with one `requestId` the same request
 * (docs/protocol.md, "A requestId names one request"): the same op, the same
 * body once parsed (key order, spacing and escapes do not count) and the same
 * principal. The fingerprint rides in the message id of the event the
 * request appends, so every instance, and this one after a restart, can tell
 * a retry (the first answer) from a reuse (`REQUEST_ID_REUSED`).
 */
import { createHash } from "node:crypto";

/** The fingerprint of one request: 16 hex digits of SHA-256 over its op, principal and parsed body. */
export function requestFingerprint(kind: string, op: string, request: unknown, principal = ""): string {
  return createHash("sha256")
    .update(`${kind}.${op}\n${principal}\n${JSON.stringify(request, sortedKeys)}`)
    .digest("hex")
    .slice(0, 16);
}

/** A JSON replacer that writes every object's keys in one order (`{a, b}` and `{b, a}` are one body). */
function sortedKeys(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return value;
  const sorted: Record<string, unknown> = {};
  for (const k of Object.keys(value).sort()) sorted[k] = (value as Record<string, unknown>)[k];
  return sorted;
}
