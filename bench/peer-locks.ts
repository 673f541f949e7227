/**
 * The lock workload of bench/locks.ts (acquire then release, each request
 * timed) done the way etcd's and Redis's users take a lock, through their
 * usual client libraries:
 *
 * - Redis: `SET name token NX PX ttl` to acquire; to release, a Lua
 *   compare-and-delete (delete only if the value is still our token), loaded
 *   once and called with EVALSHA.
 * - etcd: a transaction `If(version(name) == 0) Then(Put name token, lease)`
 *   to acquire; `If(value(name) == token) Then(Delete name)` to release. The
 *   put is attached to one lease granted (and kept alive) for the whole run,
 *   so a lock still expires if the bench dies, without the extra round trip
 *   of a lease grant per acquire.
 */
import type { Etcd3 } from "etcd3";
import type { Redis } from "ioredis";
import { REQUEST_TIMEOUT_MS, type WorkFn } from "./support.ts";

/** Picks a worker's next lock name; `failed()` moves the worker to fresh names (bench/locks.ts's nameChooser). */
export type NameChooser = (worker: number) => { name: string; failed(): void };

/** Deletes KEYS[1] only if it still holds ARGV[1]: the release of the Redis lock recipe. */
export const REDIS_RELEASE_LUA = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;

/** Options of the ioredis connection the bench drives: every command bounded, no silent offline queue or retries. */
export const REDIS_CLIENT_OPTIONS = {
  connectTimeout: 5000,
  commandTimeout: REQUEST_TIMEOUT_MS,
  maxRetriesPerRequest: 0,
  enableOfflineQueue: false,
} as const;

/** A unique lock token per acquire (a worker's counter is enough: tokens only need to differ within a run). */
function tokens(): (worker: number) => string {
  let next = 0;
  return (worker) => `w${worker}-${next++}`;
}

/** Times `op`, reports its latency through `sample` when it answers, and resolves with its answer (undefined on error). */
async function timed<T>(sample: (latencyMs: number) => void, op: () => Promise<T>): Promise<T | undefined> {
  const t0 = performance.now();
  try {
    const answer = await op();
    sample(performance.now() - t0);
    return answer;
  } catch {
    return undefined;
  }
}

/** Redis: SET NX PX, then EVALSHA of {@link REDIS_RELEASE_LUA}; `releaseSha` is the script's SHA from SCRIPT LOAD. */
export function redisLockPair(redis: Redis, releaseSha: string, names: NameChooser, ttlMs: number): WorkFn {
  const token = tokens();
  return async (worker, sample) => {
    const chosen = names(worker);
    const value = token(worker);
    const acquired = await timed(sample, () => redis.set(chosen.name, value, "PX", ttlMs, "NX"));
    if (acquired !== "OK") {
      chosen.failed();
      return 1;
    }
    const released = await timed(sample, () => redis.evalsha(releaseSha, 1, chosen.name, value));
    if (released !== 1) {
      chosen.failed();
      return 1;
    }
    return 0;
  };
}

/** etcd: the version-0 put transaction under `leaseId`, then the value-compare delete transaction. */
export function etcdLockPair(client: Etcd3, leaseId: string, names: NameChooser): WorkFn {
  const token = tokens();
  return async (worker, sample) => {
    const chosen = names(worker);
    const value = token(worker);
    const acquired = await timed(sample, () =>
      client.if(chosen.name, "Version", "==", 0).then(client.put(chosen.name).value(value).lease(leaseId)).commit(),
    );
    if (acquired?.succeeded !== true) {
      chosen.failed();
      return 1;
    }
    const released = await timed(sample, () =>
      client.if(chosen.name, "Value", "==", value).then(client.delete().key(chosen.name)).commit(),
    );
    if (released?.succeeded !== true) {
      chosen.failed();
      return 1;
    }
    return 0;
  };
}
