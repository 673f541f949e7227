/**
 * Every subject and stream name leasehold uses is built here, from the
 * configured prefix, so that the wire layout of docs/protocol.md lives in one place.
 */
import { decodeToken, encodeToken, InvalidTokenError } from "./subject-token.ts";

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
