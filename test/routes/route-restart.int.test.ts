/**
 * What survives a restart (docs/protocol.md: the stream alone rebuilds every
 * actor's state): placements, pins, the whole seen set, and requestId answers.
 */
import { describe, expect, it } from "vitest";
import { uniquePrefix } from "../support/nats.ts";
import { eventsOfKind, failed, ok, routeClient, useRouteServices } from "../support/route-fixtures.ts";

const h = useRouteServices();

describe("restart", () => {
  it("keeps placements, pins and seen hosts, and answers a repeated requestId as before", async () => {
    const prefix = uniquePrefix();
    const first = await h.service(prefix);
    const before = routeClient(first.nc, prefix);
    for (const host of ["a", "b", "c"]) ok(await before.setHost({ host, healthy: true }));
    const placed = new Map<string, string>();
    for (const [route, fp] of [
      ["r1", ""],
      ["r1", "c1"],
      ["r2", "x"],
      ["r3", ""],
    ] as const) {
      placed.set(`${route}/${fp}`, ok(await before.acquire({ route, fp, model: "m", candidates: ["a", "b", "c"] })).host!);
    }
    ok(await before.pin({ route: "r2", host: "c" }));
    ok(await before.candidates({ route: "r4", hosts: ["only-a-candidate"] }));
    const withId = { route: "r5", fp: "", model: "m", candidates: ["b"], requestId: "before-restart" };
    const answer = ok(await before.acquire(withId));
    const snapshot = ok(await before.snapshot());
    const hostList = ok(await before.listHosts());
    await first.stop();

    const second = await h.service(prefix);
    const after = routeClient(second.nc, prefix);
    expect(ok(await after.snapshot())).toEqual(snapshot);
    expect(ok(await after.listHosts())).toEqual(hostList);
    for (const [key, host] of placed) {
      const [route, fp] = key.split("/") as [string, string];
      const expected = route === "r2" ? "c" : host;
      expect(ok(await after.acquire({ route, fp, model: "m", candidates: ["a", "b", "c"] })), key).toEqual({
        host: expected,
        reused: route !== "r2" || host === "c",
      });
    }
    expect(ok(await after.get({ route: "r2" })).pinned).toBe("c");
    ok(await after.pin({ route: "r4", host: "only-a-candidate" }));
    failed(await after.pin({ route: "r4", host: "a" }), 404, "UNKNOWN_HOST");
    const eventsBefore = (await eventsOfKind(second.service, "route")).length;
    expect(ok(await after.acquire(withId))).toEqual(answer);
    expect((await eventsOfKind(second.service, "route")).length).toBe(eventsBefore);
  });
});
