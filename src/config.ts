/**
 * The service's settings (docs/protocol.md, "Running the service"), with their
 * defaults and the checks that make a bad setting fail at start rather than
 * on the first request.
 */
import { z } from "zod";
import { ROUTE_CHOOSER_NAMES, type RouteChooserName } from "./contract/route-choosers.ts";
import { isValidPrefix } from "./contract/subjects.ts";
import { principalList } from "./contract/operators.ts";

/** Every setting of `leasehold serve`. */
export interface ServiceConfig {
  /** NATS URL; undefined: start a local nats-server from nats.conf. */
  readonly nats: string | undefined;
  readonly prefix: string;
  readonly cooldownMs: number;
  /** Each further cooldown of a (proxy, target) streak lasts this factor times the one before (1: no backoff). */
  readonly cooldownBackoff: number;
  /** The longest a cooldown may last. */
  readonly maxCooldownMs: number;
  readonly routeIdleMs: number;
  readonly lockTtlMs: number;
  readonly maxTtlMs: number;
  /** Locks: the longest a blocking acquire may wait (`waitMs` above it is BAD_REQUEST). */
  readonly maxWaitMs: number;
  /** Locks: how long the head of a wait queue has to take a free lock before it loses its place. */
  readonly claimWindowMs: number;
  /** Locks: live waiters one lock's queue holds at most; a waiting acquire past them is TOO_MANY_WAITERS. */
  readonly maxWaiters: number;
  /** Locks: waiting acquires one instance holds at once, across all locks; one more is TOO_MANY_WAITERS. */
  readonly maxWaitingAcquires: number;
  /** Host loads: how many hosts without a host record have their load kept (the oldest dropped first). */
  readonly maxUnknownLoads: number;
  /** Requests served at once; past them a request waits its client's turn (src/transport/fair-queue.ts). */
  readonly maxActiveRequests: number;
  /** Requests that may wait for their turn, all clients together (a tenth of them per client); one more is UNAVAILABLE. */
  readonly maxQueuedRequests: number;
  readonly sweepIntervalMs: number;
  readonly dedupWindowMs: number;
  /** Replicas of the streams the service creates. */
  readonly replicas: number;
  /**
   * Which chooser places a new route lease: fewest active leases (default),
   * rendezvous hashing of the key, lowest published host load (`least-load`),
   * or consistent hashing of (route, model) with bounded loads (`bounded-hash`).
   */
  readonly routeChooser: RouteChooserName;
  /** bounded-hash: no host takes a new lease past `ceil(c * (A + 1) / n)` active leases (a number > 1). */
  readonly hashBalanceFactor: number;
  /** A published host load older than this is unknown. */
  readonly loadStaleMs: number;
  /** How long a delivered durable command may stay unacknowledged before JetStream redelivers it. */
  readonly commandAckWaitMs: number;
  /** Durable commands one instance works on at once. */
  readonly commandConcurrency: number;
  /** How long a command may take from arrival to answer; past it the answer is UNAVAILABLE. */
  readonly requestTimeoutMs: number;
  /**
   * Whether a request whose reply subject lies in the service's or NATS's own
   * namespaces is refused (docs/protocol.md, "Replies go only where a reply
   * may go"). Always on in production; off only in the tests that show the
   * NATS server's own refusal behind it.
   */
  readonly replyCheck: boolean;
  /** Where a request's principal comes from: nowhere (`off`: every principal is "") or the server's `Nats-Request-Info` header. */
  readonly principals: PrincipalSource;
  /** Principals that may call operator ops and act on any holder's lease (`acc/*`: every user of `acc`); empty: anyone may call operator ops. */
  readonly operators: readonly string[];
  /** Refuse a request whose principal is unknown ("") with UNAUTHENTICATED. */
  readonly requirePrincipal: boolean;
  /**
   * Whether a start with `principals: nats-request-info` first asks the
   * server which account it runs in and refuses the global account (src/transport/principal-source.ts).
   * Always on in production; off only in tests that write the header themselves.
   */
  readonly principalSourceCheck: boolean;
}

/** The sources of a request's principal. */
export const PRINCIPAL_SOURCES = ["off", "nats-request-info"] as const;
/** Where a request's principal comes from (see {@link ServiceConfig.principals}). */
export type PrincipalSource = (typeof PRINCIPAL_SOURCES)[number];

/** Defaults of docs/protocol.md. */
export const DEFAULTS: Omit<ServiceConfig, "nats"> = {
  prefix: "leasehold",
  cooldownMs: 900_000,
  cooldownBackoff: 1,
  maxCooldownMs: 86_400_000,
  routeIdleMs: 1_800_000,
  lockTtlMs: 30_000,
  maxTtlMs: 30_000,
  maxWaitMs: 60_000,
  claimWindowMs: 1000,
  maxWaiters: 10_000,
  maxWaitingAcquires: 100_000,
  maxUnknownLoads: 10_000,
  maxActiveRequests: 8,
  maxQueuedRequests: 10_000,
  sweepIntervalMs: 30_000,
  dedupWindowMs: 120_000,
  replicas: 1,
  routeChooser: "least-loaded",
  hashBalanceFactor: 1.25,
  loadStaleMs: 15_000,
  commandAckWaitMs: 30_000,
  commandConcurrency: 64,
  requestTimeoutMs: 3000,
  replyCheck: true,
  principals: "off",
  operators: [],
  requirePrincipal: false,
  principalSourceCheck: true,
};

const ms = z.coerce.number().int("must be a whole number of milliseconds").positive("must be positive");

/** A yes/no setting: a boolean, or from the environment `true`/`false`/`1`/`0`. */
const flag = z.preprocess(
  (v) =>
    typeof v === "string" ? (({ true: true, "1": true, false: false, "0": false } as Record<string, boolean>)[v.toLowerCase()] ?? v) : v,
  z.boolean({ error: "must be true or false" }),
);

const schema = z
  .object({
    nats: z.string().min(1).optional(),
    prefix: z.string().refine(isValidPrefix, "must be subject tokens of A-Z a-z 0-9 _ - separated by dots"),
    cooldownMs: ms,
    cooldownBackoff: z.coerce.number().min(1, "must be a number of at least 1").max(1000),
    maxCooldownMs: ms,
    routeIdleMs: ms,
    lockTtlMs: ms,
    maxTtlMs: ms,
    maxWaitMs: ms,
    claimWindowMs: ms,
    maxWaiters: z.coerce.number().int("must be a whole number").min(1).max(10_000_000),
    maxWaitingAcquires: z.coerce.number().int("must be a whole number").min(1).max(10_000_000),
    maxUnknownLoads: z.coerce.number().int("must be a whole number").min(1).max(10_000_000),
    maxActiveRequests: z.coerce.number().int("must be a whole number").min(1, "must be at least 1").max(1_000_000),
    maxQueuedRequests: z.coerce
      .number()
      .int("must be a whole number")
      .min(10, "must be at least 10 (a tenth of it is what one client may have waiting)")
      .max(10_000_000),
    sweepIntervalMs: ms,
    dedupWindowMs: ms,
    replicas: z.coerce.number().int("must be a whole number").min(1).max(5),
    routeChooser: z.enum(ROUTE_CHOOSER_NAMES),
    hashBalanceFactor: z.coerce
      .number()
      .refine((c) => Number.isFinite(c) && c > 1, "must be a number greater than 1")
      .refine((c) => c <= 1000, "must be at most 1000"),
    loadStaleMs: ms,
    commandAckWaitMs: ms,
    commandConcurrency: z.coerce.number().int("must be a whole number").min(1).max(4096),
    requestTimeoutMs: ms,
    replyCheck: flag,
    principals: z.enum(PRINCIPAL_SOURCES),
    operators: z.preprocess(
      (v) => (typeof v === "string" ? principalList(v) : v),
      z.array(
        z.string().regex(/^[^/\s]+(\/[^/\s]+)?$/, "must be a comma-separated list of <account> or <account>/<user> (or <account>/*)"),
      ),
    ),
    requirePrincipal: flag,
    principalSourceCheck: flag,
  })
  .refine((c) => c.lockTtlMs <= c.maxTtlMs, { message: "must not exceed --max-ttl-ms (raise that too)", path: ["lockTtlMs"] });

/** Thrown when a setting is unusable; the message names the setting. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** Validates settings (strings from flags or the environment are converted). */
export function resolveConfig(input: Partial<Record<keyof ServiceConfig, unknown>>): ServiceConfig {
  const merged: Record<string, unknown> = { ...DEFAULTS };
  for (const [key, value] of Object.entries(input)) if (value !== undefined && value !== "") merged[key] = value;
  const result = schema.safeParse(merged);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const flag = String(issue.path[0] ?? "").replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
    // A value that is not a number at all says what it got, not zod's "received NaN".
    const given = merged[String(issue.path[0])];
    const notANumber = typeof given === "string" && Number.isNaN(Number(given));
    const message = issue.code === "invalid_type" && notANumber ? `expected a number, got ${JSON.stringify(given)}` : issue.message;
    throw new ConfigError(`--${flag}: ${message}`);
  }
  return { ...result.data, nats: result.data.nats };
}
