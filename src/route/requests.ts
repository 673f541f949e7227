/** Request schemas of the route endpoints (docs/protocol.md, Routes). */
import { z } from "zod";
import { optionalId, requestBase, requiredId, withIdListFastPath } from "../transport/endpoint.ts";

const key = { route: requiredId, fp: optionalId, model: optionalId };

/** `route.<op>` request schemas, by op. */
export const routeRequests = {
  acquire: withIdListFastPath(requestBase.extend({ ...key, candidates: z.array(requiredId).readonly() }), "candidates"),
  move: requestBase.extend({ ...key, host: requiredId }),
  candidates: withIdListFastPath(requestBase.extend({ route: requiredId, hosts: z.array(requiredId).readonly() }), "hosts"),
  pin: requestBase.extend({ route: requiredId, host: requiredId }),
  unpin: requestBase.extend({ route: requiredId }),
  release: requestBase.extend({ route: requiredId }),
  get: requestBase.extend({ route: requiredId }),
  snapshot: requestBase,
};
