/**
 * A turn's result as a client reads it: its reply through JSON, as the
 * transport sends it. A whole-table answer (`route.snapshot`, `proxy.list`)
 * is built only then (src/transport/micro-service.ts, `SizedAnswer`).
 */
import type { TurnResult } from "../../src/actors/actor-runtime.ts";

export function onTheWire(result: TurnResult): TurnResult {
  return result.ok && result.reply !== undefined ? { ...result, reply: JSON.parse(JSON.stringify(result.reply)) as unknown } : result;
}
