/** The JSON object a message holds, for the readers that take a message apart without a schema (the client's and the service's). */

/**
 * The JSON object in `payload`, decoded with `decoder` (a fatal decoder
 * refuses bytes that are not UTF-8); undefined when it is not text, not JSON,
 * or JSON but not an object (an array, a string, a number, null).
 */
export function jsonObjectIn(
  payload: Uint8Array,
  decoder: InstanceType<typeof TextDecoder>,
): Readonly<Record<string, unknown>> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(payload));
  } catch {
    return undefined;
  }
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
