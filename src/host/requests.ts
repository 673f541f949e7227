/** Request schemas of the host endpoints (docs/protocol.md, Routes). */
import { z } from "zod";
import { requestBase, requiredId } from "../transport/endpoint.ts";

/** `host.<op>` request schemas, by op. */
export const hostRequests = {
  set: requestBase.extend({
    host: requiredId,
    healthy: z.boolean(),
    draining: z.boolean().default(false),
    // 1.1 host capacity: absent or null is no limit (host.set sets the whole state, so leaving it out clears a cap).
    maxLeases: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).nullable().optional(),
  }),
  list: requestBase,
};
