/**
 * Request bodies that end with a list of identifiers seen before: a router
 * sends the same candidate list (often the whole fleet) with every
 * `route.acquire`, and JSON.stringify puts it last, as
 * `…,"candidates":["h0",…]}`. When a body ends with exactly the bytes of a
 * list that was parsed and validated before, only the bytes before it are
 * parsed (closed with `}`) and the earlier list, frozen, is reused: a byte
 * comparison instead of parsing, allocating and checking 1,000 strings.
 *
 * Why that is the same request: the tail starts with a comma and closes the
 * object, so a body `H + tail` is valid JSON only when the split lies
 * between two members of the top-level object; then `H + "}"` is that
 * object without the list, and JSON's last-key-wins gives the tail's list
 * either way. When `H + "}"` does not parse, or the other fields are not
 * valid, the caller parses the whole body as before (and so refuses it with
 * the same words).
 */
import type { z } from "zod";

/** Lists shorter than this are parsed each time (cheaper than looking for them). */
export const LIST_TAILS_FROM = 32;
/** Tails remembered per request schema. */
const MAX_TAILS = 8;
/** After a list whose body did not end with its compact encoding, this many are not looked at. */
const SKIP_AFTER_MISS = 63;

const utf8 = new TextDecoder("utf-8", { fatal: true });
const encoder = new TextEncoder();

interface Tail {
  readonly bytes: Buffer;
  readonly list: readonly string[];
}

/** The known tails of one request schema's identifier list `key`. */
export class IdListTails {
  /** Most recently used first. */
  private readonly tails: Tail[] = [];
  private skip = 0;

  /** `rest`: the request schema without `key`. */
  constructor(
    private readonly key: string,
    private readonly rest: z.ZodType,
  ) {}

  /** The request `data` carries, when it ends with a known tail and the fields before it are valid; else undefined. */
  match(data: Uint8Array): unknown {
    for (let i = 0; i < this.tails.length; i++) {
      const tail = this.tails[i]!;
      const headLength = data.length - tail.bytes.length;
      if (headLength <= 0) continue;
      if (!tail.bytes.equals(Buffer.from(data.buffer, data.byteOffset + headLength, tail.bytes.length))) continue;
      if (i > 0) {
        this.tails.splice(i, 1);
        this.tails.unshift(tail);
      }
      let head: unknown;
      try {
        head = JSON.parse(utf8.decode(data.subarray(0, headLength)) + "}");
      } catch {
        return undefined;
      }
      if (typeof head !== "object" || head === null || Array.isArray(head)) return undefined;
      const others = this.rest.safeParse(head);
      return others.success ? { ...(others.data as object), [this.key]: tail.list } : undefined;
    }
    return undefined;
  }

  /** Remembers the tail of `data` when it is the compact encoding of the list of `request` (`data`, validated; its list frozen). */
  learn(data: Uint8Array, request: unknown): void {
    const list = (request as Record<string, unknown>)[this.key] as readonly string[];
    if (list.length < LIST_TAILS_FROM) return;
    if (this.skip > 0) {
      this.skip--;
      return;
    }
    const bytes = Buffer.from(encoder.encode(`,${JSON.stringify(this.key)}:${JSON.stringify(list)}}`));
    const headLength = data.length - bytes.length;
    if (headLength <= 0 || !bytes.equals(Buffer.from(data.buffer, data.byteOffset + headLength, bytes.length))) {
      // Another layout (spaces, the list not last): looking for its tail would cost on every request.
      this.skip = SKIP_AFTER_MISS;
      return;
    }
    this.tails.unshift({ bytes, list });
    if (this.tails.length > MAX_TAILS) this.tails.pop();
  }
}
