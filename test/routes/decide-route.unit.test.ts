/**
 * The route decider, step by step through the seed's order of Acquire
 * (pin, existing lease, inherit, choose), each placement reason, the reused
 * flag, draining, pins, unpin, release, move, candidates and idle expiry.
 */
import { describe, expect, it } from "vitest";
import {
  acquire,
  chosen,
  givenRoute,
  hostsOf,
  IDLE_MS,
  pinned,
  placed,
  ROUTE,
  routeEvent,
  seen,
  settingsWith,
  T0,
  touched,
} from "../support/route-given.ts";
import { MAX_ROUTE_HOSTS } from "../../src/route/decide.ts";

const up = (...hosts: string[]) => hostsOf({ up: hosts });

describe("route.acquire step 1: a pinned route", () => {
  const history = [seen("a", "b"), pinned("a")];

  it("refuses with PINNED_DOWN when the pin is unhealthy, even with a lease and healthy candidates", () => {
    const given = givenRoute([...history, placed("c1", "m", "a")]);
    given.when(acquire("c1", "m", { candidates: ["b"], hosts: hostsOf({ up: ["b"], down: ["a"] }) })).thenRejects("PINNED_DOWN");
    // A pin on a host never set counts as unhealthy too.
    givenRoute(history)
      .when(acquire("c1", "m", { candidates: ["b"], hosts: up("b") }))
      .thenRejects("PINNED_DOWN");
  });

  it("places a new key on the pin, ignoring the candidates and the chooser", () => {
    givenRoute(history)
      .when(acquire("c1", "m", { candidates: ["b"], hosts: up("a", "b"), loads: new Map([["a", 9]]) }))
      .thenRecords("RouteLeasePlaced", { fp: "c1", model: "m", host: "a", from: "", reason: "new", reused: false });
  });

  it("places on a draining pin: draining matters only to the chooser", () => {
    givenRoute(history)
      .when(acquire("c1", "m", { hosts: hostsOf({ draining: ["a"] }) }))
      .thenRecords("RouteLeasePlaced", { fp: "c1", model: "m", host: "a", from: "", reason: "new", reused: false });
  });

  it("reuses an existing lease and answers the pin, as the seed does", () => {
    const given = givenRoute([...history, placed("c1", "m", "a", T0)]);
    given.when(acquire("c1", "m", { hosts: up("a") }), T0 + 10).thenReplies({ host: "a", reused: true });
  });

  it("answers the pin even for a lease an operator moved elsewhere after pinning", () => {
    const moved = routeEvent("RouteLeasePlaced", { fp: "c1", model: "m", host: "b", from: "a", reason: "ctx", reused: false });
    givenRoute([...history, placed("c1", "m", "a"), moved])
      .when(acquire("c1", "m", { hosts: hostsOf({ up: ["a"], down: ["b"] }) }), T0 + 10)
      .thenReplies({ host: "a", reused: true });
  });
});

describe("route.acquire step 2: an existing lease", () => {
  it("is reused on a healthy host, without an event while its last use is recent", () => {
    const given = givenRoute([seen("a", "b"), placed("c1", "m", "a", T0)]);
    given
      .when(acquire("c1", "m", { candidates: ["a", "b"], hosts: up("a", "b") }), T0 + IDLE_MS / 100 - 1)
      .thenReplies({ host: "a", reused: true });
  });

  it("records the use once the recorded last use is routeIdleMs / 100 old", () => {
    const given = givenRoute([seen("a"), placed("c1", "m", "a", T0)]);
    given
      .when(acquire("c1", "m", { candidates: ["a"], hosts: up("a") }), T0 + IDLE_MS / 100)
      .thenRecords("RouteLeaseTouched", { fp: "c1", model: "m" });
    // The last touch, not the creation, is what counts.
    givenRoute([seen("a"), placed("c1", "m", "a", T0), touched("c1", "m", T0 + 5_000)])
      .when(acquire("c1", "m", { hosts: up("a") }), T0 + 5_000 + IDLE_MS / 100 - 1)
      .thenReplies({ host: "a", reused: true });
  });

  it("records every reuse when the request carries a requestId, so a repeat answers the same", () => {
    givenRoute([seen("a"), placed("c1", "m", "a", T0)])
      .when(acquire("c1", "m", { hosts: up("a"), recordReuse: true }), T0 + 1)
      .thenRecords("RouteLeaseTouched", { fp: "c1", model: "m" });
  });

  it("records new candidates with the reuse", () => {
    givenRoute([seen("a"), placed("c1", "m", "a", T0)])
      .when(acquire("c1", "m", { candidates: ["a", "c", "c", "d"], hosts: up("a") }), T0 + 1)
      .thenRecords("RouteLeaseTouched", { fp: "c1", model: "m", seen: ["c", "d"] });
  });

  it("is reused on a draining host", () => {
    givenRoute([seen("a", "b"), placed("c1", "m", "a", T0)])
      .when(acquire("c1", "m", { candidates: ["a", "b"], hosts: hostsOf({ draining: ["a"], up: ["b"] }) }), T0 + 1)
      .thenReplies({ host: "a", reused: true });
  });

  it("is reused while idle but not yet swept, as in the seed", () => {
    givenRoute([seen("a"), placed("c1", "m", "a", T0)])
      .when(acquire("c1", "m", { hosts: up("a") }), T0 + 10 * IDLE_MS)
      .thenRecords("RouteLeaseTouched", { fp: "c1", model: "m" });
  });

  it("on an unhealthy host is replaced with reason unhealthy and from set", () => {
    givenRoute([seen("a", "b"), placed("c1", "m", "a")])
      .when(acquire("c1", "m", { candidates: ["a", "b"], hosts: hostsOf({ down: ["a"], up: ["b"] }) }), T0 + 1)
      .thenRecords("RouteLeasePlaced", chosen("c1", "m", "b", { from: "a", reason: "unhealthy" }));
  });

  it("on an unhealthy host stays when no other host can take it (NO_HOST)", () => {
    givenRoute([seen("a"), placed("c1", "m", "a")])
      .when(acquire("c1", "m", { candidates: ["a"], hosts: hostsOf({ down: ["a"] }) }), T0 + 1)
      .thenRejects("NO_HOST");
  });
});

describe("route.acquire step 3: a fingerprinted key inherits the route's own host", () => {
  const routeLease = placed("", "m", "a", T0);

  it("inherits a healthy route host, reported as reused (the seed's value), reason new", () => {
    givenRoute([seen("a", "b"), routeLease])
      .when(acquire("c1", "m", { candidates: ["a", "b"], hosts: up("a", "b"), loads: new Map([["a", 5]]) }), T0 + 1)
      .thenRecords("RouteLeasePlaced", { fp: "c1", model: "m", host: "a", from: "", reason: "new", reused: true });
  });

  it("inherits a draining route host, and one that is not among the candidates", () => {
    givenRoute([seen("a", "b"), routeLease])
      .when(acquire("c1", "m", { candidates: ["b"], hosts: hostsOf({ draining: ["a"], up: ["b"] }) }), T0 + 1)
      .thenRecords("RouteLeasePlaced", { fp: "c1", model: "m", host: "a", from: "", reason: "new", reused: true });
  });

  it("replacing a lease on an unhealthy host records reason unhealthy and from", () => {
    givenRoute([seen("a", "b"), routeLease, placed("c1", "m", "b")])
      .when(acquire("c1", "m", { candidates: ["a", "b"], hosts: hostsOf({ up: ["a"], down: ["b"] }) }), T0 + 1)
      .thenRecords("RouteLeasePlaced", { fp: "c1", model: "m", host: "a", from: "b", reason: "unhealthy", reused: true });
  });

  it("does not inherit from an unhealthy route host, nor across models, nor for the route's own key", () => {
    givenRoute([seen("a", "b"), routeLease])
      .when(acquire("c1", "m", { candidates: ["a", "b"], hosts: hostsOf({ down: ["a"], up: ["b"] }) }), T0 + 1)
      .thenRecords("RouteLeasePlaced", chosen("c1", "m", "b"));
    givenRoute([seen("a", "b"), routeLease])
      .when(acquire("c1", "other", { candidates: ["b"], hosts: up("a", "b") }), T0 + 1)
      .thenRecords("RouteLeasePlaced", chosen("c1", "other", "b"));
    givenRoute([seen("a", "b"), placed("c1", "m", "a")])
      .when(acquire("", "m", { candidates: ["b"], hosts: up("a", "b") }), T0 + 1)
      .thenRecords("RouteLeasePlaced", chosen("", "m", "b"));
  });
});

describe("route.acquire step 4: the chooser", () => {
  it("picks the fewest active leases, then the smallest name (JS <), among healthy non-draining candidates", () => {
    const hosts = hostsOf({ up: ["a", "b", "c", "Z"], draining: ["d"], down: ["e"] });
    const loads = new Map([
      ["a", 2],
      ["b", 1],
      ["c", 1],
      ["Z", 3],
      ["d", 0],
      ["e", 0],
    ]);
    givenRoute()
      .when(acquire("c1", "m", { candidates: ["a", "b", "c", "Z", "d", "e", "never-set"], hosts, loads }))
      .thenRecords("RouteLeasePlaced", chosen("c1", "m", "b", { seen: ["a", "b", "c", "Z", "d", "e", "never-set"] }));
    // Upper case sorts before lower case by code unit.
    givenRoute([seen("a", "Z")])
      .when(acquire("c1", "m", { candidates: ["a", "Z"], hosts: up("a", "Z") }))
      .thenRecords("RouteLeasePlaced", chosen("c1", "m", "Z"));
  });

  it("refuses with NO_HOST when no candidate is healthy and not draining, or there are none", () => {
    givenRoute([seen("a", "b", "c")])
      .when(acquire("c1", "m", { candidates: ["a", "b", "c"], hosts: hostsOf({ draining: ["a"], down: ["b"] }) }))
      .thenRejects("NO_HOST");
    givenRoute()
      .when(acquire("c1", "m", { candidates: [], hosts: up("a") }))
      .thenRejects("NO_HOST");
  });

  it("says in a NO_HOST which route and key found no host, and names no full hosts when none is full", () => {
    for (const candidates of [[], ["a", "b"]]) {
      const { decision } = givenRoute([seen("a", "b")]).when(acquire("c1", "m", { candidates, hosts: hostsOf({ down: ["a", "b"] }) }));
      expect(decision).toMatchObject({ outcome: "reject", rejection: { code: "NO_HOST" } });
      if (decision.outcome !== "reject") return;
      expect(decision.rejection.details).toBeUndefined();
      expect(decision.rejection.message).toContain(ROUTE);
      expect(decision.rejection.message).toContain('"c1"');
      expect(decision.rejection.message).toContain('"m"');
    }
  });

  it("with the rendezvous chooser picks the same host for a key whatever the order of candidates and loads", () => {
    const rendezvous = settingsWith("rendezvous");
    const hosts = up("h1", "h2", "h3", "h4");
    const hostFor = (candidates: string[], loads: Map<string, number>) => {
      const d = givenRoute().when(acquire("c1", "m", { candidates, hosts, loads }), T0, rendezvous).decision;
      if (d.outcome !== "append" || d.type !== "RouteLeasePlaced") throw new Error(`expected a placement, got ${JSON.stringify(d)}`);
      return d.data.host;
    };
    const first = hostFor(["h1", "h2", "h3", "h4"], new Map());
    expect(hostFor(["h4", "h3", "h2", "h1"], new Map([[first, 100]]))).toBe(first);
  });

  it("with the least-load chooser reads the host loads the command carries, and names the chooser", () => {
    const hosts = up("a", "b", "c");
    const loads = new Map([
      ["a", 0],
      ["b", 5],
      ["c", 9],
    ]);
    givenRoute([seen("a", "b", "c")])
      .when(
        acquire("c1", "m", { candidates: ["a", "b", "c"], hosts, loads, hostLoads: new Map([["c", 0.5]]) }),
        T0,
        settingsWith("least-load"),
      )
      .thenRecords("RouteLeasePlaced", chosen("c1", "m", "c", { chooser: "least-load" }));
    // No load known: fewest active leases, as least-loaded.
    givenRoute([seen("a", "b", "c")])
      .when(acquire("c1", "m", { candidates: ["a", "b", "c"], hosts, loads }), T0, settingsWith("least-load"))
      .thenRecords("RouteLeasePlaced", chosen("c1", "m", "a", { chooser: "least-load" }));
  });

  it("with the bounded-hash chooser keeps a route's conversations of one model together, and names the chooser", () => {
    const settings = settingsWith("bounded-hash");
    const hosts = up("h1", "h2", "h3", "h4");
    const placedHost = (fp: string) => {
      const d = givenRoute([seen("h1", "h2", "h3", "h4")]).when(
        acquire(fp, "m", { candidates: ["h1", "h2", "h3", "h4"], hosts }),
        T0,
        settings,
      ).decision;
      if (d.outcome !== "append" || d.type !== "RouteLeasePlaced") throw new Error(`expected a placement, got ${JSON.stringify(d)}`);
      expect(d.data.chooser).toBe("bounded-hash");
      return d.data.host;
    };
    expect(new Set(["c1", "c2", "c3", "c4"].map(placedHost)).size).toBe(1);
  });
});

describe("route.acquire and the seen set", () => {
  it("adds no seen field when every candidate was seen", () => {
    givenRoute([seen("a")])
      .when(acquire("c1", "m", { candidates: ["a", "a"], hosts: up("a") }))
      .thenRecords("RouteLeasePlaced", chosen("c1", "m", "a"));
  });
});

describe("route.move", () => {
  it("records a ctx placement from the old host, without any health check", () => {
    givenRoute([seen("a"), placed("c1", "m", "a")])
      .when({ op: "move", fp: "c1", model: "m", host: "b" }, T0 + 5)
      .thenRecords("RouteLeasePlaced", { fp: "c1", model: "m", host: "b", from: "a", reason: "ctx", reused: false, seen: ["b"] });
  });

  it('records from "" when there was no lease, and always records, even onto the same host', () => {
    givenRoute([seen("a")])
      .when({ op: "move", fp: "c1", model: "m", host: "a" })
      .thenRecords("RouteLeasePlaced", { fp: "c1", model: "m", host: "a", from: "", reason: "ctx", reused: false });
    givenRoute([seen("a"), placed("c1", "m", "a")])
      .when({ op: "move", fp: "c1", model: "m", host: "a" })
      .thenRecords("RouteLeasePlaced", { fp: "c1", model: "m", host: "a", from: "a", reason: "ctx", reused: false });
  });
});

describe("route.candidates", () => {
  // Lists this long have their seen check remembered: the answers must be those of a list checked afresh.
  const fleet = Object.freeze(Array.from({ length: 40 }, (_, i) => `gpu-${i}`));

  it("records the new hosts of a long list, and nothing for a long list already seen, asked again and again", () => {
    givenRoute([seen("gpu-0")])
      .when({ op: "candidates", hosts: fleet })
      .thenRecords("RouteCandidatesSeen", { seen: fleet.slice(1) });
    const all = givenRoute([seen(...fleet)]);
    for (let i = 0; i < 3; i++) all.when({ op: "candidates", hosts: fleet }).thenReplies({});
    for (let i = 0; i < 3; i++) all.when({ op: "candidates", hosts: [...fleet] }).thenReplies({});
    // The same list against a route that has not seen all of it: the memo of the first route does not answer for it.
    givenRoute([seen(...fleet.slice(0, 39))])
      .when({ op: "candidates", hosts: fleet })
      .thenRecords("RouteCandidatesSeen", { seen: ["gpu-39"] });
  });

  it("records only hosts not yet seen, once each, and nothing when all were seen", () => {
    givenRoute([seen("a")])
      .when({ op: "candidates", hosts: ["a", "b", "b", "c"] })
      .thenRecords("RouteCandidatesSeen", { seen: ["b", "c"] });
    givenRoute([seen("a", "b")])
      .when({ op: "candidates", hosts: ["b", "a"] })
      .thenReplies({});
    givenRoute().when({ op: "candidates", hosts: [] }).thenReplies({});
  });
});

describe("route.pin", () => {
  it("refuses a host the route has never seen with UNKNOWN_HOST", () => {
    givenRoute([seen("a")])
      .when({ op: "pin", host: "b" })
      .thenRejects("UNKNOWN_HOST");
    givenRoute().when({ op: "pin", host: "a" }).thenRejects("UNKNOWN_HOST");
  });

  it("accepts a host seen only as a lease's placement (a move included)", () => {
    const moved = routeEvent("RouteLeasePlaced", { fp: "c1", model: "m", host: "x", from: "", reason: "ctx", reused: false });
    givenRoute([moved]).when({ op: "pin", host: "x" }).thenRecords("RoutePinned", { host: "x", displaced: [] });
  });

  it("displaces the leases on other hosts in the same event, sorted by fp and model", () => {
    givenRoute([seen("a", "b"), placed("z", "m", "b"), placed("c1", "m", "a"), placed("c1", "l", "b"), placed("", "m", "b")])
      .when({ op: "pin", host: "a" })
      .thenRecords("RoutePinned", {
        host: "a",
        displaced: [
          { fp: "", model: "m", host: "b" },
          { fp: "c1", model: "l", host: "b" },
          { fp: "z", model: "m", host: "b" },
        ],
      });
  });

  it("records nothing when already pinned to the host with nothing to displace, and records a re-pin elsewhere", () => {
    givenRoute([seen("a", "b"), pinned("a"), placed("c1", "m", "a")])
      .when({ op: "pin", host: "a" })
      .thenReplies({});
    givenRoute([seen("a", "b"), pinned("a"), placed("c1", "m", "a")])
      .when({ op: "pin", host: "b" })
      .thenRecords("RoutePinned", { host: "b", displaced: [{ fp: "c1", model: "m", host: "a" }] });
  });

  it("displaces a lease an operator moved off the pin since, although the route is already pinned there", () => {
    const moved = routeEvent("RouteLeasePlaced", { fp: "c1", model: "m", host: "b", from: "a", reason: "ctx", reused: false });
    givenRoute([seen("a", "b"), pinned("a"), placed("c1", "m", "a"), placed("c2", "m", "a"), moved])
      .when({ op: "pin", host: "a" })
      .thenRecords("RoutePinned", { host: "a", displaced: [{ fp: "c1", model: "m", host: "b" }] });
  });
});

describe("route.unpin", () => {
  it("records the unpin and keeps the leases", () => {
    const given = givenRoute([seen("a"), pinned("a"), placed("c1", "m", "a")]);
    given.when({ op: "unpin" }).thenRecords("RouteUnpinned", {});
    const after = givenRoute([seen("a"), pinned("a"), placed("c1", "m", "a"), routeEvent("RouteUnpinned", {})]);
    expect(after.state.pinned).toBe("");
    expect([...after.state.leases.values()].map((l) => l.host)).toEqual(["a"]);
  });

  it("records nothing for a route that is not pinned", () => {
    givenRoute([seen("a"), placed("c1", "m", "a")])
      .when({ op: "unpin" })
      .thenReplies({});
  });
});

describe("route.release", () => {
  it("drops every lease in one event and answers the count; the pin stays", () => {
    const history = [seen("a", "b"), placed("c2", "m", "a"), placed("c1", "m", "a"), pinned("a")];
    const d = givenRoute(history).when({ op: "release" });
    d.thenRecords("RouteReleased", {
      released: [
        { fp: "c1", model: "m", host: "a" },
        { fp: "c2", model: "m", host: "a" },
      ],
    });
    const after = givenRoute([
      ...history,
      routeEvent("RouteReleased", {
        released: [
          { fp: "c1", model: "m", host: "a" },
          { fp: "c2", model: "m", host: "a" },
        ],
      }),
    ]);
    expect(after.state.leases.size).toBe(0);
    expect(after.state.pinned).toBe("a");
  });

  it("answers released 0 without an event for a route without leases", () => {
    givenRoute([seen("a"), pinned("a")])
      .when({ op: "release" })
      .thenReplies({ released: 0 });
  });
});

describe("idle expiry (the sweep's expire command)", () => {
  it("expires a lease unused for more than routeIdleMs, and not one unused for exactly that long", () => {
    const history = [seen("a"), placed("c1", "m", "a", T0), touched("c1", "m", T0 + 1000)];
    givenRoute(history)
      .when({ op: "expire", fp: "c1", model: "m" }, T0 + 1000 + IDLE_MS + 1)
      .thenRecords("RouteLeaseExpired", { fp: "c1", model: "m", host: "a" });
    givenRoute(history)
      .when({ op: "expire", fp: "c1", model: "m" }, T0 + 1000 + IDLE_MS)
      .thenReplies({ expired: false });
  });

  it("does nothing for a lease that is gone", () => {
    givenRoute([seen("a")])
      .when({ op: "expire", fp: "c1", model: "m" }, T0 + 10 * IDLE_MS)
      .thenReplies({ expired: false });
  });
});

describe("the hosts a route keeps as seen", () => {
  const full = Array.from({ length: MAX_ROUTE_HOSTS }, (_, i) => `h${i}`);

  it("are at most MAX_ROUTE_HOSTS: a command that would add one more is BAD_REQUEST and records nothing", () => {
    const given = givenRoute([seen(...full)]);
    given.when(acquire("c1", "m", { candidates: ["h0", "new"], hosts: up("h0", "new") })).thenRejects("BAD_REQUEST");
    given.when({ op: "candidates", hosts: ["new"] }).thenRejects("BAD_REQUEST");
    given.when({ op: "move", fp: "c1", model: "m", host: "new" }).thenRejects("BAD_REQUEST");
  });

  it("still serve hosts already seen at the bound", () => {
    givenRoute([seen(...full)])
      .when(acquire("c1", "m", { candidates: ["h1"], hosts: up("h1") }))
      .thenRecords("RouteLeasePlaced", {
        fp: "c1",
        model: "m",
        host: "h1",
        from: "",
        reason: "new",
        reused: false,
        chooser: "least-loaded",
      });
    givenRoute([seen(...full.slice(1))])
      .when({ op: "candidates", hosts: ["new"] })
      .thenRecords("RouteCandidatesSeen", { seen: ["new"] });
  });
});
