/**
 * The host decider: `host.set` records a change of health, draining or
 * capacity (nothing when the host already is so); `admit` lets a new route
 * lease onto a capped host while it has room.
 */
import { type Decision, recorder, reject, replyOnly } from "../actors/kind-logic.ts";
import type { HostEvent } from "./events.ts";
import type { HostState } from "./state.ts";
import type { AdmitLease, HostCommand } from "./commands.ts";

const record = recorder<HostEvent>();

/** Decides one host command. */
export function decideHost(state: HostState, command: HostCommand): Decision<HostEvent> {
  switch (command.op) {
    case "set":
      if (state.set && state.healthy === command.healthy && state.draining === command.draining && state.maxLeases === command.maxLeases) {
        return replyOnly({ host: state.host });
      }
      return record("HostStateSet", { healthy: command.healthy, draining: command.draining, maxLeases: command.maxLeases });
    case "admit":
      return decideAdmit(state, command);
  }
}

/** Do two lists hold the same sequences (in any order)? */
function sameSeqs(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return b.every((s) => set.has(s));
}

/** Open admissions (not settled) that may still become leases on the host. */
export function openAdmissions(state: HostState, settled: readonly number[]): number {
  const done = new Set(settled);
  let open = 0;
  for (const a of state.admissions) if (!done.has(a.seq)) open++;
  return open;
}

/**
 * Admits while the route leases on the host plus the admissions that may
 * still become leases stay under the cap. An admission this instance has not
 * been told is settled counts as taken (the safe side: a slot held a little
 * too long, never a lease too many).
 */
function decideAdmit(state: HostState, command: AdmitLease): Decision<HostEvent> {
  // The cap was lifted meanwhile: nothing to guard, the route places freely.
  if (state.maxLeases === null) return replyOnly({ host: state.host, admission: 0 });
  // Another admission was recorded or closed since the caller counted: its
  // count may miss a lease that a closing moved out of the open admissions.
  if (
    !sameSeqs(
      state.admissions.map((a) => a.seq),
      command.counted,
    )
  )
    return replyOnly({ host: state.host, admission: 0, stale: true });
  const taken = command.active + openAdmissions(state, command.settled);
  if (taken >= state.maxLeases) {
    return reject("NO_HOST", `host ${state.host} is full (${taken} of ${state.maxLeases} route leases)`, { full: [state.host] });
  }
  const open = new Set(state.admissions.map((a) => a.seq));
  return record("HostLeaseAdmitted", {
    route: command.route,
    fp: command.fp,
    model: command.model,
    routeSeq: command.routeSeq,
    closed: command.settled.filter((s) => open.has(s)),
  });
}
