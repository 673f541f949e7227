import { describe, expect, it } from "vitest";
import { leaderHoldsQuorum } from "../../src/events/leader-lease.ts";

const peer = (name: string, activeMs: number, offline = false) => ({ name, current: true, offline, active: activeMs * 1e6, lag: 0 });

describe("leaderHoldsQuorum", () => {
  it("holds on a single replica, whatever the cluster says", () => {
    expect(leaderHoldsQuorum(undefined, 1)).toBe(true);
  });

  it("holds while the leader heard from one of its two followers within the lease", () => {
    expect(leaderHoldsQuorum({ leader: "n1", replicas: [peer("n2", 2999), peer("n3", 60_000)] }, 3)).toBe(true);
  });

  it("does not hold once neither follower was heard from within the lease, or the one heard is offline", () => {
    expect(leaderHoldsQuorum({ leader: "n3", replicas: [peer("n1", 3000), peer("n2", 5000)] }, 3)).toBe(false);
    expect(leaderHoldsQuorum({ leader: "n3", replicas: [peer("n1", 10, true), peer("n2", 5000)] }, 3)).toBe(false);
  });

  it("does not hold without a leader", () => {
    expect(leaderHoldsQuorum({ replicas: [peer("n1", 10), peer("n2", 10)] }, 3)).toBe(false);
  });

  it("needs three of five", () => {
    expect(leaderHoldsQuorum({ leader: "n1", replicas: [peer("n2", 10), peer("n3", 10), peer("n4", 9000), peer("n5", 9000)] }, 5)).toBe(
      true,
    );
    expect(leaderHoldsQuorum({ leader: "n1", replicas: [peer("n2", 10), peer("n3", 9000), peer("n4", 9000), peer("n5", 9000)] }, 5)).toBe(
      false,
    );
  });
});
