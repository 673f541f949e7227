/**
 * Lock holds as the clients see them with true clocks: a client holds a
 * lease (one generation of a lock) from the first answer that granted it
 * until the latest `expiresAt` its grant and renewals gave, less the margin
 * the holder keeps, or until it sent a release of it. Two holds of one lock
 * must never overlap; the audit cannot see such an overlap when the deciding
 * instance's clock is off, since every event carries that instance's own `at`.
 */
import type { OpRecord } from "./history.ts";

/** One client's hold of one generation of a lock, epoch ms on the clients' (true) clock. */
export interface Hold {
  readonly lock: string;
  readonly generation: number;
  readonly client: string;
  readonly from: number;
  readonly until: number;
}

interface LeaseBody {
  readonly name: string;
  readonly etag: string;
  readonly generation: number;
  readonly expiresAt: string;
}

/** The holds the records show; `marginMs` is how long before `expiresAt` a holder stops counting on its lease. */
export function holdsOf(records: readonly OpRecord[], marginMs = 0): Hold[] {
  const generationOf = new Map<string, string>();
  const holds = new Map<string, { lock: string; generation: number; client: string; from: number; until: number }>();
  for (const r of records) {
    if ((r.command !== "lock.acquire" && r.command !== "lock.renew") || r.result.status !== "ok" || r.returnAt === null) continue;
    const lease = r.result.body.lease as LeaseBody;
    const key = `${lease.name}\n${lease.generation}`;
    generationOf.set(lease.etag, key);
    const until = Date.parse(lease.expiresAt) - marginMs;
    const hold = holds.get(key);
    if (hold === undefined) holds.set(key, { lock: lease.name, generation: lease.generation, client: r.client, from: r.returnAt, until });
    else hold.until = Math.max(hold.until, until);
  }
  // A release of any etag of a generation ends its hold when it is sent.
  for (const r of records) {
    const hold = r.command === "lock.release" ? holds.get(generationOf.get(String(r.body.etag)) ?? "") : undefined;
    if (hold !== undefined && r.invokeAt >= hold.from) hold.until = Math.min(hold.until, r.invokeAt);
  }
  return [...holds.values()].filter((h) => h.until > h.from);
}

/** Pairs of holds of one lock whose times overlap (each pair once). */
export function overlappingHolds(holds: readonly Hold[]): [Hold, Hold][] {
  const byLock = new Map<string, Hold[]>();
  for (const h of holds) byLock.set(h.lock, [...(byLock.get(h.lock) ?? []), h]);
  const pairs: [Hold, Hold][] = [];
  for (const list of byLock.values()) {
    const sorted = [...list].sort((a, b) => a.from - b.from);
    for (let i = 0; i < sorted.length; i++) {
      for (let j = i + 1; j < sorted.length && sorted[j]!.from < sorted[i]!.until; j++) pairs.push([sorted[i]!, sorted[j]!]);
    }
  }
  return pairs;
}
