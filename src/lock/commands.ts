/** The commands a lock actor takes (docs/protocol.md, Locks), already validated. */
import type { SessionLookup } from "../session/index.ts";

/**
 * What every lock command may carry: the session table as the application
 * read it (caught up with the stream), so that a decision reads the ends of
 * the sessions the lock's leases and waiters hang on and stays pure.
 */
export interface WithSessions {
  readonly sessions?: SessionLookup | undefined;
}

/** What an acquire asks for, and so what the claim that looks again on its behalf asks for too: a lease for `owner`. */
export interface LeaseTerms extends WithSessions {
  /** Take the lease under this session: its owner must be the session's, its TTL and end are the session's. */
  readonly session?: string | undefined;
  readonly owner: string;
  readonly ttlMs?: number | undefined;
}

/** Take the lock if it is free or its lease has expired; with `waitMs > 0`, join the wait queue instead of failing. */
export interface AcquireLock extends LeaseTerms {
  readonly op: "acquire";
  /** How long the request may wait for the lock (0 or absent: fail fast, the v1 behaviour). */
  readonly waitMs?: number | undefined;
  /** The request's requestId: a place in the queue belongs to it. */
  readonly requestId?: string | undefined;
}
/**
 * A waiting acquire looking again (never sent by a client: the runtime's
 * lock waiters send it for a parked request): take the lock if its place is
 * the head and the lock is free, else keep waiting, or give up at `giveUpAt`.
 */
export interface ClaimLock extends LeaseTerms {
  readonly op: "claim";
  /** Stream sequence of the request's `LockWaiterQueued`. */
  readonly place: number;
  /** When the request stops waiting (epoch ms): its own `waitMs` from its arrival. */
  readonly giveUpAt: number;
  /** When the request arrived (epoch ms), for `waitedMs`. */
  readonly waitingSince: number;
}
/** Extend the current lease (owner and etag must match). */
export interface RenewLock extends WithSessions {
  readonly op: "renew";
  readonly owner: string;
  readonly etag: string;
  readonly ttlMs?: number | undefined;
}
/** Give the current lease up (etag must match). */
export interface ReleaseLock extends WithSessions {
  readonly op: "release";
  readonly etag: string;
}
/** Read the live lease. */
export interface GetLock extends WithSessions {
  readonly op: "get";
}
/** The operator's way out of CORRUPT: frees the lock, keeps the generation rising. */
export interface ResetLock extends WithSessions {
  readonly op: "reset";
}

/** Any lock command. */
export type LockCommand = AcquireLock | ClaimLock | RenewLock | ReleaseLock | GetLock | ResetLock;

/** Server-side lock settings. */
export interface LockSettings {
  /** TTL when a request names none. */
  readonly lockTtlMs: number;
  /** Ceiling on any TTL, and on how far in the future a recorded lease may end. */
  readonly maxTtlMs: number;
  /** How long the head waiter has to take a free lock before it loses its place (default 1000). */
  readonly claimWindowMs?: number;
  /** Live waiters the queue holds at most; a waiting acquire past them is TOO_MANY_WAITERS (default: no bound). */
  readonly maxWaiters?: number;
}

/** The default claim window. */
export const DEFAULT_CLAIM_WINDOW_MS = 1000;
