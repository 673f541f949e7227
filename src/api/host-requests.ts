/** Request schemas of the host endpoints (docs/protocol.md, Routes). */
import { z } from "zod";
import { requestBase, requiredId } from "./validation.ts";

/** `host.<op>` request schemas, by op. */
export const hostRequests = {
  set: requestBase.extend({ host: requiredId, healthy: z.boolean(), draining: z.boolean().default(false) }),
  list: requestBase,
};
