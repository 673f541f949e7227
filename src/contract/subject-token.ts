/**
 * Subject-token encoding: turns any identifier the contract allows (any
 * well-formed Unicode string, up to 256 UTF-8 bytes) into exactly one valid
 * NATS subject token, and back. Decoding is the exact inverse of encoding:
 * every code point comes back as it went in (a byte-order mark, a zero-width
 * character, either normalization form), so two ids that differ anywhere are
 * two tokens and two entities.
 *
 * The encoding keeps `[A-Za-z0-9_-]` as is, so ordinary names stay readable
 * in `nats stream view` and tail output, and writes every other UTF-8 byte as
 * `~XX` (upper-case hex). `~` is itself escaped, so decoding is unambiguous.
 * The empty string (allowed for `fp`, `model`, `target`) encodes as `~`,
 * which no non-empty input can produce.
 *
 * @example
 * encodeToken("orders.eu") // "orders~2Eeu"
 * decodeToken("orders~2Eeu") // "orders.eu"
 */
const plain = new Uint8Array(128);
for (const ch of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") {
  plain[ch.charCodeAt(0)] = 1;
}
const hex = "0123456789ABCDEF";
const utf8 = new TextEncoder();
// `ignoreBOM` keeps a leading U+FEFF in the output: the default drops it, which
// decoded `~EF~BB~BFjob` to `job` and folded one lock into another's history.
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The token that stands for the empty identifier. */
export const EMPTY_TOKEN = "~";

/** Encodes an identifier as a single NATS subject token (see module docs). */
export function encodeToken(id: string): string {
  if (id.length === 0) return EMPTY_TOKEN;
  // Fast path: most names are already safe ASCII.
  let safe = true;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (c >= 128 || plain[c] !== 1) {
      safe = false;
      break;
    }
  }
  if (safe) return id;
  let out = "";
  for (const byte of utf8.encode(id)) {
    if (byte < 128 && plain[byte] === 1) out += String.fromCharCode(byte);
    else out += "~" + hex[byte >> 4] + hex[byte & 15];
  }
  return out;
}

/** Thrown when a string is not a token that {@link encodeToken} could have produced. */
export class InvalidTokenError extends Error {
  override readonly name = "InvalidTokenError";
}

/** Decodes a token produced by {@link encodeToken}; throws {@link InvalidTokenError} otherwise. */
export function decodeToken(token: string): string {
  if (token === EMPTY_TOKEN) return "";
  if (token.length === 0) throw new InvalidTokenError("empty token");
  if (!token.includes("~")) {
    for (let i = 0; i < token.length; i++) {
      const c = token.charCodeAt(i);
      if (c >= 128 || plain[c] !== 1) throw new InvalidTokenError(`invalid character at ${i} in ${token}`);
    }
    return token;
  }
  const bytes: number[] = [];
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    if (c === 0x7e) {
      const h = token.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(h)) throw new InvalidTokenError(`bad escape at ${i} in ${token}`);
      const byte = parseInt(h, 16);
      if (byte < 128 && plain[byte] === 1) throw new InvalidTokenError(`needless escape at ${i} in ${token}`);
      bytes.push(byte);
      i += 2;
    } else if (c < 128 && plain[c] === 1) {
      bytes.push(c);
    } else {
      throw new InvalidTokenError(`invalid character at ${i} in ${token}`);
    }
  }
  try {
    return strictUtf8.decode(new Uint8Array(bytes));
  } catch (cause) {
    throw new InvalidTokenError(`token ${token} is not UTF-8`, { cause });
  }
}
