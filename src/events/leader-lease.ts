/**
 * Whether a replicated stream's leader may still answer reads: a leader cut
 * off from its followers goes on answering from what it has until it
 * notices the lost quorum (about 10 s on nats-server 2.10), while the others
 * elect a new leader and commit writes it never sees. A follower campaigns
 * only after hearing nothing from the leader for its election timeout
 * (nats-server: at least 4 s); so while a quorum (the leader counted) was
 * heard from within {@link LEADER_LEASE_MS}, no other leader can have been
 * elected, and the leader's answer is current.
 */
import type { ClusterInfo } from "@nats-io/jetstream";

/** How recently a quorum must have been heard from, ms: below nats-server's least election timeout (4 s), with a second for delays. */
export const LEADER_LEASE_MS = 3000;

/** True when the leader the stream info describes heard from a quorum of `replicas` within `leaseMs`. */
export function leaderHoldsQuorum(cluster: ClusterInfo | undefined, replicas: number, leaseMs = LEADER_LEASE_MS): boolean {
  if (replicas <= 1) return true;
  if (cluster?.leader === undefined || cluster.leader === "") return false;
  const heard = (cluster.replicas ?? []).filter((p) => !p.offline && p.active / 1e6 < leaseMs).length;
  return 1 + heard >= Math.floor(replicas / 2) + 1;
}
