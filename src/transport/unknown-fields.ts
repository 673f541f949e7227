/**
 * Strict request bodies (docs/protocol.md, "Strict request bodies"): the
 * first field of a body that its op does not define, in the order the body
 * writes its fields.
 *
 * `JSON.parse` keeps the order of an object's keys with one exception: keys
 * that look like array indices ("0", "42") come first, in ascending order.
 * So the order of the parsed object is the body's order unless an unknown
 * key starts with a digit; only then are the body's top-level keys read
 * again from its text, by a small scanner (a refusal, and a rare one: off
 * the hot path, which costs one set lookup per field).
 */

const utf8 = new TextDecoder("utf-8");

/**
 * The first key of `body` that is not in `defined`, in the body's order, or
 * undefined when there is none. `raw` is the body's bytes (valid UTF-8 JSON,
 * already parsed into `body`); without it the parsed order is taken.
 */
export function firstUnknownField(body: Record<string, unknown>, defined: ReadonlySet<string>, raw?: Uint8Array): string | undefined {
  for (const key in body) {
    if (defined.has(key)) continue;
    if (raw === undefined || !startsWithDigit(key)) return key;
    for (const written of topLevelKeys(utf8.decode(raw))) if (!defined.has(written)) return written;
    return key;
  }
  return undefined;
}

function startsWithDigit(key: string): boolean {
  const c = key.charCodeAt(0);
  return c >= 48 && c <= 57;
}

/** The keys of the JSON object `text`, in the order it writes them (duplicates included). */
export function* topLevelKeys(text: string): Generator<string> {
  let i = skipSpace(text, 0);
  if (text[i] !== "{") return;
  i = skipSpace(text, i + 1);
  while (text[i] === '"') {
    const end = endOfString(text, i);
    yield JSON.parse(text.slice(i, end)) as string;
    // Past the colon, then past the value to the comma or the closing brace.
    i = endOfValue(text, skipSpace(text, end) + 1);
    if (text[i] !== ",") return;
    i = skipSpace(text, i + 1);
  }
}

/** The index of the first character at or after `i` that is not JSON whitespace. */
function skipSpace(text: string, i: number): number {
  while (i < text.length && (text[i] === " " || text[i] === "\t" || text[i] === "\n" || text[i] === "\r")) i++;
  return i;
}

/** The index just past the string literal that starts at `i`. */
function endOfString(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 92)
      j++; // a backslash escapes the next character
    else if (c === 34) return j + 1;
  }
  return text.length;
}

/** The index of the comma or closing brace that ends the value starting at `i` (nesting and strings skipped). */
function endOfValue(text: string, i: number): number {
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const c = text[j];
    if (c === '"') j = endOfString(text, j) - 1;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      if (depth === 0) return j;
      depth--;
    } else if (c === "," && depth === 0) return j;
  }
  return text.length;
}
