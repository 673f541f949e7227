/** Route events (PROTOCOL.md, "The event stream") and the schemas their `data` must satisfy when read back. */
import type { z } from "zod";

/** `data` schemas of every route event, by type. */
export const routeEventSchemas: Record<string, z.ZodType> = {};
