/** Request schemas of the lock endpoints (docs/protocol.md, Locks). */
import { z } from "zod";
import { positiveMs, requestBase, requiredId } from "./validation.ts";

const etag = z.string().min(1).max(256);

/** 1.1's blocking acquire is not built yet: `waitMs: 0` (the v1 behaviour) is accepted, a wait is refused rather than silently ignored. */
const waitMs = z.number().int().min(0).max(0, "blocking acquire (waitMs > 0) is not supported by this version of the service");

/** `lock.<op>` request schemas, by op. */
export const lockRequests = {
  acquire: requestBase.extend({ name: requiredId, owner: requiredId, ttlMs: positiveMs.optional(), waitMs: waitMs.optional() }),
  renew: requestBase.extend({ name: requiredId, owner: requiredId, etag, ttlMs: positiveMs.optional() }),
  release: requestBase.extend({ name: requiredId, etag }),
  get: requestBase.extend({ name: requiredId }),
  reset: requestBase.extend({ name: requiredId }),
};
