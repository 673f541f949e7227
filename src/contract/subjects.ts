/**
 * Every subject and stream name leasehold uses is built here, from the
 * configured prefix, so that the wire layout of docs/protocol.md lives in one place.
 */

/** The kinds of actor, each writing its own subjects (`session` is 1.2's). */
export type ActorKind = "proxy" | "host" | "route" | "lock" | "session";

/** All actor kinds, in a stable order. */
export const ACTOR_KINDS: readonly ActorKind[] = ["proxy", "host", "route", "lock", "session"];

/** The service name registered with the NATS service framework. */
export const SERVICE_NAME = "leasehold";

/** Subject and stream names for one prefix. */
export class Subjects {
  /** The event stream's name: the prefix upper-cased, non `A-Z0-9` as `_`, then `_EVENTS`. */
  readonly eventStream: string;
  /** The durable command stream's name (`<P>_COMMANDS`). */
  readonly commandStream: string;
  /** Filter covering every event (`<prefix>.events.>`). */
  readonly allEvents: string;
  /** The object store bucket holding projection snapshots (`<P>_PROJECTIONS`). */
  readonly projectionBucket: string;

  constructor(readonly prefix: string) {
    const base = prefix.toUpperCase().replace(/[^A-Z0-9]/g, "_");
    this.eventStream = `${base}_EVENTS`;
    this.commandStream = `${base}_COMMANDS`;
    this.allEvents = `${prefix}.events.>`;
    this.projectionBucket = `${base}_PROJECTIONS`;
  }

  /** The subject an actor appends its events to. */
  event(kind: ActorKind, id: string): string {
    return `${this.prefix}.events.${kind}.${encodeToken(id)}`;
  }

  /** Filter covering every event of one kind. */
  eventsOfKind(kind: ActorKind): string {
    return `${this.prefix}.events.${kind}.*`;
  }

  /** Filter covering every durable command (`<prefix>.cmd.>`), the subjects of the command stream. */
  get allDurableCommands(): string {
    return `${this.prefix}.cmd.>`;
  }

  /** The subject a durable command is published to, `<prefix>.cmd.<kind>.<op>`. */
  durableCommand(kind: string, op: string): string {
    return `${this.prefix}.cmd.${kind}.${op}`;
  }

  /** The `<kind>.<op>` of a durable command's subject (undefined for any other subject). */
  durableKindOp(subject: string): string | undefined {
    const head = `${this.prefix}.cmd.`;
    return subject.startsWith(head) ? subject.slice(head.length) : undefined;
  }

  /** Where a durable command that could not be parsed or validated is reported, `<prefix>.cmd-errors.<kind>.<op>`. */
  commandError(kindOp: string): string {
    return `${this.prefix}.cmd-errors.${kindOp}`;
  }

  /** The subject prefix of one kind's request/reply endpoints, `<prefix>.v1.<kind>`. */
  commandGroup(kind: string): string {
    return `${this.prefix}.v1.${kind}`;
  }

  /** Where a host (or its agent) publishes its load, `<prefix>.loads.<host>` (the host as one token, as events name actors). */
  load(host: string): string {
    return `${this.prefix}.loads.${encodeToken(host)}`;
  }

  /** Filter covering every host's load (`<prefix>.loads.>`). */
  get allLoads(): string {
    return `${this.prefix}.loads.>`;
  }

  /**
   * The host a load subject names: its one token decoded as {@link load}
   * encodes it, else (a token that no encoding produced, or a name written
   * with its dots as several tokens) the rest of the subject as written;
   * undefined for any other subject.
   */
  hostOfLoad(subject: string): string | undefined {
    const head = `${this.prefix}.loads.`;
    if (!subject.startsWith(head) || subject.length === head.length) return undefined;
    const rest = subject.slice(head.length);
    if (rest.includes(".")) return rest;
    try {
      return decodeToken(rest);
    } catch (e) {
      if (e instanceof InvalidTokenError) return rest;
      throw e;
    }
  }

  /** The request/reply subject of a command, `<prefix>.v1.<kind>.<op>`. */
  command(kind: string, op: string): string {
    return `${this.commandGroup(kind)}.${op}`;
  }
}

/** Is `prefix` usable as the leading tokens of a subject? */
export function isValidPrefix(prefix: string): boolean {
  return /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(prefix);
}

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
