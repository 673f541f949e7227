/**
 * Lock holds as the clients see them with true clocks: a client holds a
 * lease (one generation of a lock) from the first answer that granted it
 * until the end the latest answer (grant or renewal) gives it — its
 * `expiresAt`, or the lock keeper's local deadline — or until it sent a
 * release of it. Two holds of one lock
 * must never overlap; the audit cannot see such an overlap when the deciding
 * instance's clock is off, since every event carries that instance's own `at`.
 */
import type { StoredMessage } from "../../src/events/event-log.ts";
import type { VerdictBuilder } from "./checks.ts";
import type { OpRecord } from "./history.ts";

/** One client's hold of one generation of a lock, epoch ms on the clients' (true) clock. */
export interface Hold {
  readonly lock: string;
  readonly generation: number;
  readonly client: string;
  readonly from: number;
  readonly until: number;
  /** The operations that made it (for reports). */
  readonly requestIds: readonly string[];
}

interface LeaseBody {
  readonly name: string;
  readonly etag: string;
  readonly generation: number;
  readonly expiresAt: string;
}

/** Until when a holder counts on a lease, given the answer that granted or renewed it and when that attempt was sent. */
export type HoldEnd = (answer: { readonly sentAt: number; readonly ttlMs: number; readonly expiresAtMs: number }) => number;

/** A holder that trusts `expiresAt` (less `marginMs`) on its own, true, clock. */
export const untilExpiresAt =
  (marginMs = 0): HoldEnd =>
  (a) =>
    a.expiresAtMs - marginMs;

/** The holds the records show, each ending where `end` says. */
export function holdsOf(records: readonly OpRecord[], end: HoldEnd = untilExpiresAt()): Hold[] {
  const generationOf = new Map<string, string>();
  const holds = new Map<string, { lock: string; generation: number; client: string; from: number; until: number; requestIds: string[] }>();
  for (const r of records) {
    if ((r.command !== "lock.acquire" && r.command !== "lock.renew") || r.result.status !== "ok" || r.returnAt === null) continue;
    const lease = r.result.body.lease as LeaseBody & { ttlMs: number };
    const key = `${lease.name}\n${lease.generation}`;
    generationOf.set(lease.etag, key);
    const sentAt = r.attempts.at(-1)?.sentAt ?? r.invokeAt;
    const until = end({ sentAt, ttlMs: lease.ttlMs, expiresAtMs: Date.parse(lease.expiresAt) });
    const hold = holds.get(key);
    if (hold === undefined)
      holds.set(key, {
        lock: lease.name,
        generation: lease.generation,
        client: r.client,
        from: r.returnAt,
        until,
        requestIds: [r.requestId],
      });
    else {
      // The latest answer says until when (a renew with a shorter TTL shortens the lease).
      hold.until = until;
      hold.requestIds.push(r.requestId);
    }
  }
  // A release of any etag of a generation ends its hold when it is sent.
  for (const r of records) {
    const hold = r.command === "lock.release" ? holds.get(generationOf.get(String(r.body.etag)) ?? "") : undefined;
    if (hold === undefined || r.invokeAt < hold.from) continue;
    hold.until = Math.min(hold.until, r.invokeAt);
    hold.requestIds.push(r.requestId);
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

/** Counts every overlap as an `overlapping-holds` violation, with the operations and the lock's events that made it. */
export function checkHolds(
  records: readonly OpRecord[],
  messages: readonly StoredMessage[],
  end: HoldEnd,
  t0: number,
  verdict: VerdictBuilder,
): void {
  const decoder = new TextDecoder();
  const byId = new Map(records.map((r) => [r.requestId, r]));
  const describe = (h: Hold) =>
    `${h.client} (gen ${h.generation}) +${h.from - t0}..+${h.until - t0} ms by ` +
    h.requestIds
      .map((id) => byId.get(id)!)
      .map(
        (r) =>
          `${r.command} +${r.invokeAt - t0}..+${(r.returnAt ?? NaN) - t0} ${JSON.stringify(r.result.status === "ok" ? r.result.body : r.result)}`,
      )
      .join("; ");
  for (const [a, b] of overlappingHolds(holdsOf(records, end))) {
    const events = messages
      .filter((m) => m.subject.endsWith(`.lock.${a.lock}`) && m.time >= a.from - 5000 && m.time <= b.until)
      .map((m) => `seq ${m.seq} stored +${m.time - t0}: ${decoder.decode(m.payload)}`);
    verdict.add("overlapping-holds", `${a.lock}: ${describe(a)} | ${describe(b)} | events: ${events.join(" ; ")}`);
  }
}
