/**
 * client.host and client.route against a real service: every method's typed
 * reply, and the route refusals as their own error classes.
 */
import { describe, expect, it } from "vitest";
import { NoHostError, PinnedDownError, UnknownHostError } from "../../src/index.ts";
import { expectRejects, useClientHarness } from "./harness.ts";

const h = useClientHarness();

describe("client.host and client.route", () => {
  it("host.set/list and every route method answer the contract's typed replies", async () => {
    const { client } = await h.start();
    expect(await client.host.set({ host: "h2", healthy: true })).toEqual({ host: "h2" });
    expect(await client.host.set({ host: "h1", healthy: true })).toEqual({ host: "h1" });
    expect(await client.host.set({ host: "h3", healthy: true, draining: true })).toEqual({ host: "h3" });
    expect(await client.host.list()).toEqual({
      hosts: [
        { host: "h1", healthy: true, draining: false, maxLeases: null, active: 0, load: null },
        { host: "h2", healthy: true, draining: false, maxLeases: null, active: 0, load: null },
        { host: "h3", healthy: true, draining: true, maxLeases: null, active: 0, load: null },
      ],
    });

    // Equal loads: the smallest name; the draining host is never chosen.
    expect(await client.route.acquire({ route: "chat", fp: "", model: "m", candidates: ["h3", "h2", "h1"] })).toEqual({
      host: "h1",
      reused: false,
    });
    expect(await client.route.acquire({ route: "chat", fp: "", model: "m", candidates: ["h3", "h2", "h1"] })).toEqual({
      host: "h1",
      reused: true,
    });
    // A fingerprinted conversation inherits the route's own host.
    expect(await client.route.acquire({ route: "chat", fp: "c1", model: "m", candidates: ["h2"] })).toEqual({ host: "h1", reused: true });
    // Another route goes to the least loaded host.
    expect(await client.route.acquire({ route: "mail", fp: "", model: "m", candidates: ["h1", "h2"] })).toEqual({
      host: "h2",
      reused: false,
    });

    const chat = await client.route.get({ route: "chat" });
    expect(chat.pinned).toBe("");
    expect(chat.leases.map((l) => [l.route, l.fp, l.model, l.host])).toEqual([
      ["chat", "", "m", "h1"],
      ["chat", "c1", "m", "h1"],
    ]);
    for (const l of chat.leases) expect([Date.parse(l.createdAt), Date.parse(l.lastUsedAt)]).not.toContain(NaN);

    expect(await client.route.move({ route: "chat", fp: "c1", model: "m", host: "h2" })).toEqual({ from: "h1", host: "h2" });
    expect(await client.route.move({ route: "chat", fp: "new", model: "m", host: "h2" })).toEqual({ from: "", host: "h2" });
    expect(await client.route.candidates({ route: "chat", hosts: ["h4"] })).toEqual({});
    // h4 was never set (so unhealthy), but it has been seen: pinning is allowed.
    expect(await client.route.pin({ route: "chat", host: "h4" })).toEqual({});
    expect((await client.route.get({ route: "chat" })).pinned).toBe("h4");
    expect(await client.route.unpin({ route: "chat" })).toEqual({});
    expect((await client.route.get({ route: "chat" })).pinned).toBe("");

    const snapshot = await client.route.snapshot();
    expect(snapshot.leases.map((l) => [l.route, l.fp, l.host])).toEqual([["mail", "", "h2"]]);
    expect((await client.host.list()).hosts.map((x) => [x.host, x.active])).toEqual([
      ["h1", 0],
      ["h2", 1],
      ["h3", 0],
    ]);
    expect(await client.route.release({ route: "mail" })).toEqual({ released: 1 });
    expect(await client.route.release({ route: "mail" })).toEqual({ released: 0 });
    expect(await client.route.snapshot()).toEqual({ leases: [] });
  });

  it("throws UnknownHostError, NoHostError and PinnedDownError", async () => {
    const { client } = await h.start();
    await expectRejects(client.route.pin({ route: "r", host: "never-seen" }), UnknownHostError, "UNKNOWN_HOST", 404);
    await expectRejects(client.route.acquire({ route: "r", fp: "", model: "", candidates: [] }), NoHostError, "NO_HOST", 503);
    // Seen but never set, hence unhealthy.
    await expectRejects(client.route.acquire({ route: "r", fp: "", model: "", candidates: ["h1"] }), NoHostError, "NO_HOST", 503);
    await client.host.set({ host: "h1", healthy: true });
    expect(await client.route.acquire({ route: "r", fp: "", model: "", candidates: ["h1"] })).toEqual({ host: "h1", reused: false });
    await client.route.pin({ route: "r", host: "h1" });
    await client.host.set({ host: "h1", healthy: false });
    await expectRejects(client.route.acquire({ route: "r", fp: "", model: "", candidates: ["h1"] }), PinnedDownError, "PINNED_DOWN", 503);
  });

  it("route.acquire sends no requestId by default, so reusing a placement writes no event", async () => {
    const { client, svc } = await h.start();
    await client.host.set({ host: "h1", healthy: true });
    await client.route.acquire({ route: "hot", fp: "", model: "m", candidates: ["h1"] });
    const subject = svc.service.subjects.event("route", "hot");
    const before = await svc.service.log.lastSubjectSeq(subject);
    for (let i = 0; i < 5; i++)
      expect(await client.route.acquire({ route: "hot", fp: "", model: "m", candidates: ["h1"] })).toEqual({ host: "h1", reused: true });
    expect(await svc.service.log.lastSubjectSeq(subject)).toBe(before);
  });
});
