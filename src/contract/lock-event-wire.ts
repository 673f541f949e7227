/**
 * Lock events as a reader outside the service sees them on the stream (the
 * client's `lock.watch`): the fields that say who holds a lock, read from a
 * message without the service's schemas. A message that is not a lock event
 * with those fields well typed reads as `undefined`: the reader skips it (the
 * service's own fold is the judge of what it means).
 */
import { jsonObjectIn } from "./json-object.ts";

/** What a lock event says about its lock's holder. */
export type LockEventWire =
  | {
      readonly type: "LockAcquired" | "LockRenewed";
      readonly data: {
        readonly owner: string;
        readonly generation: number;
        readonly ttlMs: number;
        readonly expiresAt: string;
        /** The session a `LockAcquired` took the lease under. */
        readonly session?: string;
      };
    }
  | { readonly type: "LockReleased" | "LockReset"; readonly data: { readonly generation: number } }
  /** Any other lock event (a waiter queueing): it does not change the holder. */
  | { readonly type: "other"; readonly data: Readonly<Record<string, unknown>> };

const decoder = new TextDecoder();

/** Reads one stored message as a lock event, or `undefined` when it is not one. */
export function readLockEvent(payload: Uint8Array): LockEventWire | undefined {
  const value = jsonObjectIn(payload, decoder);
  if (value === undefined) return undefined;
  const { type, kind, data } = value;
  if (kind !== "lock" || typeof type !== "string" || typeof data !== "object" || data === null) return undefined;
  const d = data as Record<string, unknown>;
  const generation = Number.isSafeInteger(d["generation"]) ? (d["generation"] as number) : undefined;
  switch (type) {
    case "LockAcquired":
    case "LockRenewed": {
      const { owner, ttlMs, expiresAt } = d;
      if (typeof owner !== "string" || generation === undefined || typeof ttlMs !== "number" || typeof expiresAt !== "string") {
        return undefined;
      }
      const session = d["session"];
      return typeof session === "string" && type === "LockAcquired"
        ? { type, data: { owner, generation, ttlMs, expiresAt, session } }
        : { type, data: { owner, generation, ttlMs, expiresAt } };
    }
    case "LockReleased":
    case "LockReset":
      return generation === undefined ? undefined : { type, data: { generation } };
    default:
      return { type: "other", data: d };
  }
}
