/** Request schemas of the lock endpoints (docs/protocol.md, Locks). */
import { z } from "zod";
import { positiveMs, requestBase, requiredId } from "./validation.ts";

const etag = z.string().min(1).max(256);

/** `lock.<op>` request schemas, by op. */
export const lockRequests = {
  acquire: requestBase.extend({ name: requiredId, owner: requiredId, ttlMs: positiveMs.optional() }),
  renew: requestBase.extend({ name: requiredId, owner: requiredId, etag, ttlMs: positiveMs.optional() }),
  release: requestBase.extend({ name: requiredId, etag }),
  get: requestBase.extend({ name: requiredId }),
  reset: requestBase.extend({ name: requiredId }),
};
