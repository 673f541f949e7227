/**
 * Session ids (docs/protocol.md, "Sessions"): the service chooses them, as
 * subject tokens as they are. A `session.open` with a `requestId` gets the id
 * derived from its owner and requestId, so that a retry reaches the same
 * session actor (whose remembered reply then answers it); one without gets
 * an unguessable id.
 */
import { createHash } from "node:crypto";

/** The id of the session a `session.open` opens: derived from `(owner, requestId)` when it has one, else `fresh()`. */
export function sessionIdFor(owner: string, requestId: string | undefined, fresh: () => string): string {
  if (requestId === undefined) return fresh();
  // 128 bits of SHA-256, base64url: only [A-Za-z0-9_-], so the id is its own subject token.
  return createHash("sha256").update(`${owner}\u0000${requestId}`).digest().subarray(0, 16).toString("base64url");
}
