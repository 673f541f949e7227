/** Host events (PROTOCOL.md, "The event stream") and the schemas their `data` must satisfy when read back. */
import type { z } from "zod";

/** `data` schemas of every host event, by type. */
export const hostEventSchemas: Record<string, z.ZodType> = {};
