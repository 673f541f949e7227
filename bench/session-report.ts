/** The tables of bench/sessions.ts, shared with bench/all.ts (which reads the bench's JSON). */
import { markdownTable, round } from "./support.ts";

/** Wire traffic per second while keeping the locks. */
export interface WireRate {
  readonly requestsPerSec: number;
  readonly eventsPerSec: number;
}

/** The keepalive cost of one session against one keeper per lock. */
export interface SessionCost {
  readonly oneSession: WireRate;
  readonly separateKeepers: WireRate;
  readonly requestRatio: number;
  readonly eventRatio: number;
}

/** One SIGKILL of the worker, in ms (server instants where recorded). */
export interface SessionKill {
  readonly killToSessionEndMs: number;
  readonly killToSessionGetNullMs: number;
  readonly locksStillHeldAfter: number;
  readonly waiterGrantAfterEndRecordedMs: number;
  readonly waiterGrantAfterEndSeenMs: number;
}

/** The two tables of a run (also used by bench/all.ts). */
export function sessionTables(settings: { locks: number; ttlMs: number }, cost: SessionCost, kills: readonly SessionKill[]): string {
  const n = settings.locks.toLocaleString("en-US");
  return [
    markdownTable(
      [`keeping ${n} locks (TTL ${settings.ttlMs} ms)`, "requests/s", "events/s"],
      [
        ["one session (session keeper)", cost.oneSession.requestsPerSec, cost.oneSession.eventsPerSec],
        [`${n} lock keepers`, cost.separateKeepers.requestsPerSec, cost.separateKeepers.eventsPerSec],
        ["keepers / session", cost.requestRatio, cost.eventRatio],
      ],
    ),
    "",
    markdownTable(
      [
        "SIGKILL of the worker",
        "kill → session end ms",
        "kill → session.get null ms",
        "locks still held after",
        "waiter grant after end ms (recorded / seen)",
      ],
      kills.map((k, i) => [
        `kill ${i + 1}`,
        round(k.killToSessionEndMs),
        round(k.killToSessionGetNullMs),
        k.locksStillHeldAfter,
        `${round(k.waiterGrantAfterEndRecordedMs)} / ${round(k.waiterGrantAfterEndSeenMs)}`,
      ]),
    ),
  ].join("\n");
}
