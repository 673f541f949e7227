/** Request schemas of the proxy endpoints (docs/protocol.md, Proxies). */
import { z } from "zod";
import { optionalId, positiveMs, requestBase, requiredId } from "../transport/endpoint.ts";

/**
 * A label set: a JSON object of string values. Rebuilt from its own entries,
 * so a key such as `__proto__` stays an ordinary label instead of being dropped.
 */
const labels = z
  .custom<Record<string, unknown>>((v) => typeof v === "object" && v !== null && !Array.isArray(v), "must be an object of string values")
  .superRefine((v, ctx) => {
    for (const [key, value] of Object.entries(v)) {
      if (typeof value !== "string")
        ctx.addIssue({ code: "custom", message: `label ${JSON.stringify(key)} must be a string`, path: [key] });
    }
  })
  .transform((v) => Object.fromEntries(Object.entries(v)) as Record<string, string>);

const count = z.number().int().nonnegative();

/** `proxy.<op>` request schemas, by op. */
export const proxyRequests = {
  register: requestBase.extend({
    proxy: requiredId,
    maxLeases: count,
    latencyMs: count.default(0),
    labels: labels.default({}),
    healthy: z.boolean().default(true),
  }),
  remove: requestBase.extend({ proxy: requiredId }),
  acquire: requestBase.extend({
    ttlMs: positiveMs,
    target: optionalId.default(""),
    candidates: z.array(requiredId).readonly().optional(),
    labels: labels.default({}),
  }),
  release: requestBase.extend({ leaseId: requiredId }),
  report: requestBase.extend({
    leaseId: requiredId,
    result: z.enum(["ok", "rate_limited", "banned"]),
    target: optionalId.default(""),
  }),
  list: requestBase,
  counts: requestBase,
};
