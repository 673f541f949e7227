/**
 * The route fold's seen set (the hosts a route has seen as candidates, which
 * `route.pin` accepts): every host an event names joins it, alongside hosts
 * already there, and an event that names none leaves it as it was.
 */
import { describe, expect, it } from "vitest";
import { evolveRoute, initialRouteState } from "../../src/route/state.ts";
import type { HistoryEntry } from "../../src/events/envelope.ts";
import { placed, routeEvent, seen, T0, touched } from "../support/route-given.ts";

const fold = (history: readonly HistoryEntry[]) => history.reduce(evolveRoute, initialRouteState("r"));

describe("route fold: seen hosts", () => {
  it("adds new hosts named together with known ones", () => {
    const two = fold([seen("h1"), seen("h1", "h2")]);
    expect([...two.seen].sort()).toEqual(["h1", "h2"]);
    expect([...evolveRoute(two, placed("", "m", "h3", T0, { seen: ["h2", "h4"] })).seen].sort()).toEqual(["h1", "h2", "h3", "h4"]);
    expect([...evolveRoute(two, placed("", "m", "h1", T0, { seen: ["h5"] })).seen].sort()).toEqual(["h1", "h2", "h5"]);
  });

  it("leaves the set alone for events that name no host", () => {
    const state = fold([
      seen("h1"),
      placed("", "m", "h1"),
      touched("", "m", T0 + 1000),
      routeEvent("RouteLeaseExpired", { fp: "", model: "m", host: "h1" }, T0 + 2000),
      routeEvent("RouteUnpinned", {}, T0 + 3000),
      routeEvent("RouteReleased", { released: [] }, T0 + 4000),
    ]);
    expect([...state.seen]).toEqual(["h1"]);
  });
});
