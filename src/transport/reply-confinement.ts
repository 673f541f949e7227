/**
 * Where a reply may go (docs/protocol.md, "Replies go only where a reply may
 * go"). A request names its reply subject, and the service publishes there
 * with its own rights: a reply aimed at `$JS.API.STREAM.DELETE.<stream>`
 * would delete the event stream, one aimed at `<prefix>.events.lock.<name>`
 * would write a message into a lock's history. So a reply subject in the
 * service's or NATS's own namespaces is refused before the request is
 * carried out, and so is one under the service's own inboxes (a forged
 * answer to a call the service itself is waiting on).
 */
import type { Logger } from "pino";

/** The namespaces NATS keeps for itself: JetStream's API and acks, object and key-value stores, services, the system account. */
const NATS_NAMESPACES = ["$JS.", "$JSC.", "$O.", "$KV.", "$SRV.", "$SYS."] as const;

/** Tells whether a reply subject is one the service may publish to. */
export type ReplyGuard = (reply: string) => boolean;

/**
 * The guard of a service on `prefix` whose own connections take replies under
 * `ownInboxes` (their inbox prefixes): a reply subject may be anything but a
 * subject under one of those, under `<prefix>.`, or under NATS's namespaces.
 */
export function replyGuard(prefix: string, ownInboxes: readonly string[] = []): ReplyGuard {
  const reserved = [`${prefix}.`, ...NATS_NAMESPACES, ...ownInboxes.map((inbox) => `${inbox}.`)];
  const exact = new Set([prefix, ...NATS_NAMESPACES.map((ns) => ns.slice(0, -1)), ...ownInboxes]);
  return (reply) => !exact.has(reply) && !reserved.some((head) => reply.startsWith(head));
}

/** What a refused reply subject is reported to (a log line at warn and `leasehold_refused_replies_total`). */
export type RefusedReply = (reply: string, subject: string, path: "request" | "durable") => void;

/** Settings of {@link replyConfinement}. */
export interface ReplyConfinementOptions {
  readonly prefix: string;
  /** The inbox prefixes of the service's own connections (`_INBOX`, shared with clients, is left out). */
  readonly ownInboxes: readonly (string | undefined)[];
  /** False only in the tests that show the NATS server's own refusal behind this check. */
  readonly enabled: boolean;
  readonly logger: Logger;
  /** Counts a refusal (`leasehold_refused_replies_total`). */
  readonly count?: ((path: "request" | "durable") => void) | undefined;
  /** Fewest milliseconds between two warnings (a flood of such requests must not flood the log; default 1000). */
  readonly logPeriodMs?: number;
}

/** The guard and the refusal report of one service instance, as {@link MicroService} and the command consumer take them. */
export function replyConfinement(options: ReplyConfinementOptions): { replyAllowed?: ReplyGuard; onRefusedReply: RefusedReply } {
  const { logger, count, logPeriodMs = 1000 } = options;
  const ownInboxes = options.ownInboxes.filter((inbox): inbox is string => inbox !== undefined && inbox !== "_INBOX");
  let lastAt = -Infinity;
  let suppressed = 0;
  const onRefusedReply: RefusedReply = (reply, subject, path) => {
    count?.(path);
    const now = performance.now();
    if (now - lastAt < logPeriodMs) {
      suppressed++;
      return;
    }
    logger.warn({ reply, subject, path, suppressedSinceLast: suppressed }, "request refused: its reply subject is in a reserved namespace");
    [lastAt, suppressed] = [now, 0];
  };
  return options.enabled ? { replyAllowed: replyGuard(options.prefix, ownInboxes), onRefusedReply } : { onRefusedReply };
}
