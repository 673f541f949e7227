/** Request schemas of the lock endpoints (docs/protocol.md, Locks). */
import { z } from "zod";
import { positiveMs, requestBase, requiredId } from "../transport/validation.ts";

const etag = z.string().min(1).max(256);

/** How long a blocking acquire may wait; the ceiling is the server's `--max-wait-ms`, checked by the endpoint. */
const waitMs = z.number().int().min(0);

/** `lock.<op>` request schemas, by op. */
export const lockRequests = {
  acquire: requestBase
    .extend({
      name: requiredId,
      owner: requiredId,
      ttlMs: positiveMs.optional(),
      session: requiredId.optional(),
      waitMs: waitMs.optional(),
    })
    // 1.2 sessions: a session lease's TTL is its session's, so a TTL of its own would be ignored silently.
    .refine((r) => r.session === undefined || r.ttlMs === undefined, {
      message: "must not be given with session (a session lease's TTL is the session's)",
      path: ["ttlMs"],
    }),
  renew: requestBase.extend({ name: requiredId, owner: requiredId, etag, ttlMs: positiveMs.optional() }),
  release: requestBase.extend({ name: requiredId, etag }),
  get: requestBase.extend({ name: requiredId }),
  reset: requestBase.extend({ name: requiredId }),
};
