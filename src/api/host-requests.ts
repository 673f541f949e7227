/** Request schemas of the host endpoints (docs/protocol.md, Routes). */
import { z } from "zod";
import { requestBase, requiredId } from "./validation.ts";

/** `host.<op>` request schemas, by op. */
export const hostRequests = {
  set: requestBase.extend({
    host: requiredId,
    healthy: z.boolean(),
    draining: z.boolean().default(false),
    // 1.1's host capacity is not built yet: "no limit" is accepted, a cap is refused rather than silently ignored.
    maxLeases: z.null("host capacity (maxLeases) is not supported by this version of the service").optional(),
  }),
  list: requestBase,
};
