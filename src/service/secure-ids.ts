/**
 * Unguessable ids (lease ids, session ids): 16 bytes from the operating
 * system's CSPRNG, base64url. The bytes are drawn for many ids at once:
 * a `randomBytes` call per id cost 2.4 µs of a proxy request's 65 µs of CPU
 * (bench/request-cost.ts), most of it the call, not the bytes. Every byte
 * is used once.
 */
import { randomFillSync } from "node:crypto";

/** Bytes per id (128 bits). */
const ID_BYTES = 16;
/** Ids drawn per refill. */
const IDS_PER_FILL = 256;

/** A generator of fresh unguessable ids, each 22 base64url characters. */
export function secureIds(): () => string {
  const pool = Buffer.alloc(ID_BYTES * IDS_PER_FILL);
  let next = pool.length;
  return () => {
    if (next === pool.length) {
      randomFillSync(pool);
      next = 0;
    }
    const id = pool.toString("base64url", next, next + ID_BYTES);
    next += ID_BYTES;
    return id;
  };
}
