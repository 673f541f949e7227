/** Field schemas shared by the envelope and the event `data` of every kind. */
import { z } from "zod";
import { isUtcInstant } from "./envelope.ts";

/** An RFC 3339 UTC instant as `Date.prototype.toISOString()` writes it. */
export const instant = z.string().refine(isUtcInstant, "not an RFC 3339 UTC instant");
/** A count or a sequence that may be zero. */
export const count = z.number().int().nonnegative();
/** A positive whole number (TTL, generation). */
export const positiveInt = z.number().int().positive();
