/**
 * What the chaos clients record: every logical operation (one requestId, one
 * or more attempts) with its invoke and return instants, and the figures of
 * availability computed from those records.
 */

/** How one attempt ended, as the client saw it. */
export type AttemptOutcome = "ok" | "error" | "unavailable" | "timeout" | "no-responders" | "failed";

/** One request sent (a logical operation may send several with the same requestId). */
export interface Attempt {
  readonly sentAt: number;
  readonly endAt: number;
  readonly outcome: AttemptOutcome;
  /** The contract error code when outcome is "error" or "unavailable". */
  readonly code?: string;
  /** The service's reason, when outcome is "unavailable" (to tell which path answered). */
  readonly message?: string;
}

/** The outcome of a logical operation: a success body, a contract refusal, or unknown (never learned). */
export type OpResult =
  | { readonly status: "ok"; readonly body: Record<string, unknown> }
  | { readonly status: "error"; readonly code: string; readonly details: Record<string, unknown> }
  | { readonly status: "unknown" };

/** One logical operation of one client. */
export interface OpRecord {
  readonly id: number;
  readonly client: string;
  /** `<kind>.<op>`, e.g. `lock.acquire`. */
  readonly command: string;
  readonly body: Record<string, unknown>;
  readonly requestId: string;
  /** When the first attempt was sent (epoch ms). */
  readonly invokeAt: number;
  /** When the definitive answer arrived; null when the outcome stayed unknown. */
  returnAt: number | null;
  result: OpResult;
  readonly attempts: Attempt[];
}

/** A window during which the system was not expected to serve everyone (a fault and its recovery allowance). */
export interface Outage {
  readonly from: number;
  /** When service is owed again. */
  readonly until: number;
}

/** Availability figures from the records. */
export interface Availability {
  readonly requests: number;
  readonly attempts: number;
  readonly ok: number;
  readonly refused: number;
  readonly unknown: number;
  /** Longest time any logical operation waited for its definitive answer (unknown ones: until the client gave up, at its deadline). */
  readonly longestUnavailableMs: number;
  /** Attempts sent outside every outage that timed out, got no responder or UNAVAILABLE. */
  readonly unservedOutsideOutages: number;
}

/** When the operation ended: its answer, else its last attempt (the client gave up), else `endAt`. */
function endOf(r: OpRecord, endAt: number): number {
  return r.returnAt ?? r.attempts.at(-1)?.endAt ?? endAt;
}

/** Computes the availability figures; `endAt` closes operations that were never answered. */
export function availability(records: readonly OpRecord[], outages: readonly Outage[], endAt: number): Availability {
  let longest = 0;
  let unserved = 0;
  let attempts = 0;
  for (const r of records) {
    longest = Math.max(longest, endOf(r, endAt) - r.invokeAt);
    for (const a of r.attempts) {
      attempts++;
      if (a.outcome === "ok" || a.outcome === "error") continue;
      if (!outages.some((o) => a.sentAt >= o.from && a.sentAt < o.until)) unserved++;
    }
  }
  return {
    requests: records.length,
    attempts,
    ok: records.filter((r) => r.result.status === "ok").length,
    refused: records.filter((r) => r.result.status === "error").length,
    unknown: records.filter((r) => r.result.status === "unknown").length,
    longestUnavailableMs: longest,
    unservedOutsideOutages: unserved,
  };
}

/**
 * The longest wait for a definitive answer counted from `backAt` (the moment
 * NATS was back): for operations still open then or started later,
 * answer time minus max(invoke, backAt); unknown ones count until the client gave up.
 */
export function longestWaitAfter(records: readonly OpRecord[], backAt: number, endAt: number): number {
  let longest = 0;
  for (const r of records) {
    const answered = endOf(r, endAt);
    if (answered < backAt) continue;
    longest = Math.max(longest, answered - Math.max(r.invokeAt, backAt));
  }
  return longest;
}

/**
 * The attempts sent outside every outage that got no answer in time, counted
 * by outcome, by command and by second since `origin` (where the time is
 * written `+<s>s`): what the service's authors need to find the stall.
 */
export function unservedBreakdown(records: readonly OpRecord[], outages: readonly Outage[], origin: number): Record<string, number> {
  const counts: Record<string, number> = {};
  const bump = (k: string) => (counts[k] = (counts[k] ?? 0) + 1);
  for (const r of records) {
    for (const a of r.attempts) {
      if (a.outcome === "ok" || a.outcome === "error" || outages.some((o) => a.sentAt >= o.from && a.sentAt < o.until)) continue;
      bump(a.outcome);
      bump(r.command);
      bump(`+${Math.floor((a.sentAt - origin) / 1000)}s`);
    }
  }
  return counts;
}
