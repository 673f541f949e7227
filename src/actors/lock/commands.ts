/** The commands a lock actor takes (docs/protocol.md, Locks), already validated. */

/** Take the lock if it is free or its lease has expired. */
export interface AcquireLock {
  readonly op: "acquire";
  readonly owner: string;
  readonly ttlMs?: number | undefined;
}
/** Extend the current lease (owner and etag must match). */
export interface RenewLock {
  readonly op: "renew";
  readonly owner: string;
  readonly etag: string;
  readonly ttlMs?: number | undefined;
}
/** Give the current lease up (etag must match). */
export interface ReleaseLock {
  readonly op: "release";
  readonly etag: string;
}
/** Read the live lease. */
export interface GetLock {
  readonly op: "get";
}
/** The operator's way out of CORRUPT: frees the lock, keeps the generation rising. */
export interface ResetLock {
  readonly op: "reset";
}

/** Any lock command. */
export type LockCommand = AcquireLock | RenewLock | ReleaseLock | GetLock | ResetLock;

/** Server-side lock settings. */
export interface LockSettings {
  /** TTL when a request names none. */
  readonly lockTtlMs: number;
  /** Ceiling on any TTL, and on how far in the future a recorded lease may end. */
  readonly maxTtlMs: number;
}
