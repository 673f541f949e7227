/**
 * A parser of the JSON that `JSON.stringify` writes for an event, faster than
 * `JSON.parse` on it: a fold parses every event of the stream, and
 * `JSON.parse` was most of decoding one (bench/backlog-fold.ts).
 *
 * It reads a subset only: ASCII text (given with its bytes), objects,
 * arrays, strings without escapes,
 * integers of up to 15 characters, `true`, `false` and `null`, without
 * whitespace, duplicate keys or a `__proto__` key, nested at most
 * {@link MAX_DEPTH} deep. For anything else it answers undefined and the
 * caller asks `JSON.parse`; whatever it answers is what `JSON.parse` answers
 * for the same text, keys in the same order (test/events/json-subset.unit.test.ts).
 *
 * The gain is mostly in the keys: an event's keys come in the same places
 * event after event, so the key read last time at the same place (the n-th
 * key of the text) is compared in place and, when it matches, that same
 * string is the key again: no new string, and the object takes the shape
 * the previous one took. A longer string value is copied from the bytes
 * rather than sliced from the text: a slice would keep the whole text alive
 * for as long as a state keeps the value (and reads slower).
 */

/** What a reader answers when the text leaves the subset. */
const OUT = Symbol("outside the subset");
type Out = typeof OUT;

/** How deep objects and arrays may nest (deeper: `JSON.parse` judges). */
const MAX_DEPTH = 32;
/** How many key places are remembered (the keys of one event are far fewer). */
const KEY_PLACES = 128;

/** The key read last at each place (the n-th key of a text). */
const keysByPlace: (string | undefined)[] = new Array<string | undefined>(KEY_PLACES).fill(undefined);

/** Below this length V8 copies a slice anyway (SlicedString::kMinLength); from it on, a string is copied from the bytes. */
const SLICE_MIN = 13;
/** Node's one-byte string from a range of bytes (a Buffer method; any Uint8Array does as `this`). */
const latin1Slice = (Buffer.prototype as unknown as { latin1Slice: (this: Uint8Array, start: number, end: number) => string }).latin1Slice;

let text = "";
const EMPTY = new Uint8Array(0);
/** The text's bytes, while one is read. */
let bytes: Uint8Array = EMPTY;
let at = 0;
let place = 0;

/**
 * `JSON.parse(json)` when `json` is in the subset; undefined when it is not
 * (then `JSON.parse` must judge it). `utf8` is the UTF-8 encoding `json` was
 * decoded from: as long as `json` only when every byte is ASCII.
 */
export function parseJsonSubset(json: string, utf8: Uint8Array): unknown {
  if (utf8.length !== json.length) return undefined;
  text = json;
  bytes = utf8;
  at = 0;
  place = 0;
  const value = readValue(0);
  const whole = value !== OUT && at === json.length;
  text = "";
  bytes = EMPTY;
  return whole ? value : undefined;
}

function readValue(depth: number): unknown {
  const c = text.charCodeAt(at);
  if (c === 34 /* " */) return readString();
  if (c === 123 /* { */) return depth < MAX_DEPTH ? readObject(depth + 1) : OUT;
  if (c === 91 /* [ */) return depth < MAX_DEPTH ? readArray(depth + 1) : OUT;
  if ((c >= 48 && c <= 57) || c === 45 /* - */) return readInteger();
  if (c === 116 /* t */ && text.startsWith("true", at)) {
    at += 4;
    return true;
  }
  if (c === 102 /* f */ && text.startsWith("false", at)) {
    at += 5;
    return false;
  }
  if (c === 110 /* n */ && text.startsWith("null", at)) {
    at += 4;
    return null;
  }
  return OUT;
}

/** A string without escapes or control characters (`JSON.parse` rejects the latter; the former it reads, this does not). */
function readString(): string | Out {
  const start = ++at;
  for (;;) {
    const c = text.charCodeAt(at);
    if (c === 34) {
      const end = at++;
      return end - start < SLICE_MIN ? text.slice(start, end) : latin1Slice.call(bytes, start, end);
    }
    // NaN (the text's end) fails the comparison too.
    if (!(c >= 32 && c !== 92 /* \ */)) return OUT;
    at++;
  }
}

/** `-?(0|[1-9][0-9]*)`, at most 15 characters: exactly a double, read as `JSON.parse` reads it. */
function readInteger(): number | Out {
  const start = at;
  if (text.charCodeAt(at) === 45) at++;
  const first = text.charCodeAt(at);
  if (first === 48) at++;
  else if (first >= 49 && first <= 57) {
    at++;
    while (isDigit(text.charCodeAt(at))) at++;
  } else return OUT;
  const next = text.charCodeAt(at);
  if (next === 46 /* . */ || next === 101 /* e */ || next === 69 /* E */ || at - start > 15) return OUT;
  return Number(text.slice(start, at));
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** A key: the one read last at this place when the text has it here, else read anew (and remembered for this place). */
function readKey(): string | Out {
  if (text.charCodeAt(at) !== 34) return OUT;
  const here = place++;
  const known = here < KEY_PLACES ? keysByPlace[here] : undefined;
  if (known !== undefined && text.charCodeAt(at + 1 + known.length) === 34 && text.startsWith(known, at + 1)) {
    at += known.length + 2;
    return known;
  }
  const key = readString();
  if (key !== OUT && here < KEY_PLACES) keysByPlace[here] = key;
  return key;
}

function readObject(depth: number): Record<string, unknown> | Out {
  at++;
  const object: Record<string, unknown> = {};
  if (text.charCodeAt(at) === 125 /* } */) {
    at++;
    return object;
  }
  for (;;) {
    const key = readKey();
    // `__proto__` would set the prototype here (JSON.parse makes it an own key); a repeated key JSON.parse lets the last win.
    if (key === OUT || key === "__proto__" || text.charCodeAt(at) !== 58 /* : */ || Object.hasOwn(object, key)) return OUT;
    at++;
    const value = readValue(depth);
    if (value === OUT) return OUT;
    object[key] = value;
    const c = text.charCodeAt(at++);
    if (c === 125) return object;
    if (c !== 44 /* , */) return OUT;
  }
}

function readArray(depth: number): unknown[] | Out {
  at++;
  const array: unknown[] = [];
  if (text.charCodeAt(at) === 93 /* ] */) {
    at++;
    return array;
  }
  for (;;) {
    const value = readValue(depth);
    if (value === OUT) return OUT;
    array.push(value);
    const c = text.charCodeAt(at++);
    if (c === 93) return array;
    if (c !== 44) return OUT;
  }
}
