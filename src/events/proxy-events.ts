/** Proxy events (PROTOCOL.md, "The event stream") and the schemas their `data` must satisfy when read back. */
import type { z } from "zod";

/** `data` schemas of every proxy event, by type. */
export const proxyEventSchemas: Record<string, z.ZodType> = {};
