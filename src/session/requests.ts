/** Request schemas of the session endpoints (docs/protocol.md, "Sessions"). */
import { positiveMs, requestBase, requiredId } from "../transport/endpoint.ts";

/** `session.<op>` request schemas, by op. */
export const sessionRequests = {
  open: requestBase.extend({ owner: requiredId, ttlMs: positiveMs.optional() }),
  keepalive: requestBase.extend({ id: requiredId }),
  close: requestBase.extend({ id: requiredId }),
  get: requestBase.extend({ id: requiredId }),
};
