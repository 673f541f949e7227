/**
 * Replay equals the service: an in-memory service (the real modules, a
 * manual clock) runs a random workload; between rounds the test records what
 * the service answers (proxy.list, proxy.counts, host.list, route.snapshot,
 * route.get, lock.get) and when. Afterwards, replaying the log at each
 * recorded instant gives exactly those answers, including expiry that
 * happened with no event (the clock moved on, nothing was written).
 */
import { describe, expect, it } from "vitest";
import type { TurnResult } from "../../src/actors/actor-runtime.ts";
import { foldStream, replayInstant, replayView, type ReplayView } from "../../src/tools/replay.ts";
import { simulateWorkload } from "./support/workload.ts";
import type { SimService } from "./support/sim-service.ts";

interface Checkpoint {
  readonly at: number;
  readonly seq: number;
  readonly proxies: unknown;
  readonly counts: unknown;
  readonly hosts: unknown;
  readonly snapshot: unknown;
  readonly routes: Map<string, unknown>;
  /** lock.get's reply, or the error code. */
  readonly locks: Map<string, unknown>;
}

const reply = (r: TurnResult): unknown => (r.ok ? r.reply : { error: r.rejection.code });

async function record(sim: SimService, routes: readonly string[], locks: readonly string[]): Promise<Checkpoint> {
  const at = sim.clock.now();
  const [proxies, counts, hosts, snapshot] = await Promise.all(
    ["proxy.list", "proxy.counts", "host.list", "route.snapshot"].map(async (op) => reply(await sim.call(op, {}))),
  );
  const routeReplies = new Map(
    await Promise.all(routes.map(async (route) => [route, reply(await sim.call("route.get", { route }))] as const)),
  );
  const lockReplies = new Map(await Promise.all(locks.map(async (name) => [name, reply(await sim.call("lock.get", { name }))] as const)));
  return { at, seq: sim.log.messages.length, proxies, counts, hosts, snapshot, routes: routeReplies, locks: lockReplies };
}

/** What the service would have answered, according to a replay view. */
function answersOf(view: ReplayView) {
  return {
    proxies: { proxies: view.proxies },
    counts: { counts: Object.fromEntries(view.proxies!.filter((p) => p.active > 0).map((p) => [p.proxy, p.active])) },
    // Loads are not events: the service, with no host publishing one, answers null, and the stream has none to replay.
    hosts: { hosts: view.hosts!.map((h) => ({ ...h, load: null })) },
    snapshot: { leases: view.routes!.flatMap((r) => r.leases) },
    route: (name: string) => {
      const r = view.routes!.find((x) => x.route === name);
      return { pinned: r?.pinned ?? "", leases: r?.leases ?? [] };
    },
    lock: (name: string) => {
      const l = view.locks!.find((x) => x.name === name);
      return l?.state === "corrupt" ? { error: "CORRUPT" } : { lease: l?.lease ?? null, waiters: l?.waiters ?? 0 };
    },
  };
}

describe("replay", () => {
  it("at every recorded instant equals what the service answered then", async () => {
    const routes = Array.from({ length: 30 }, (_, i) => `r${i}`);
    const locks = Array.from({ length: 40 }, (_, i) => `lock/${i}`);
    const checkpoints: Checkpoint[] = [];
    const sim = await simulateWorkload({
      events: 4000,
      seed: 11,
      onRound: async (s, round) => {
        if (round % 7 !== 0) return;
        checkpoints.push(await record(s, routes, locks));
        // Later events must not share the recorded instant; sometimes let a lot of time pass with nothing written.
        s.clock.advance(round % 21 === 0 ? 25_000 : 1);
        if (round % 21 === 0) checkpoints.push(await record(s, routes, locks));
        s.clock.advance(1);
      },
    });
    expect(checkpoints.length).toBeGreaterThan(50);

    let withExpiryOnly = 0;
    for (const cp of checkpoints) {
      const fold = await foldStream(sim.log.readStream({ toTime: cp.at }), sim.subjects, { toTime: cp.at });
      expect(fold.seq).toBe(cp.seq);
      const view = replayView(fold, replayInstant(fold, { toTime: cp.at }, 0));
      const answers = answersOf(view);
      expect(view.at).toBe(new Date(cp.at).toISOString());
      expect(answers.proxies).toEqual(cp.proxies);
      expect(answers.counts).toEqual(cp.counts);
      expect(answers.hosts).toEqual(cp.hosts);
      expect(answers.snapshot).toEqual(cp.snapshot);
      for (const [route, r] of cp.routes) expect(answers.route(route)).toEqual(r);
      for (const [name, l] of cp.locks) expect(answers.lock(name)).toEqual(l);
      if (checkpoints.some((other) => other !== cp && other.seq === cp.seq && other.at < cp.at)) withExpiryOnly++;
    }
    // Some checkpoints differ from an earlier one only by the clock: expiry by arithmetic was compared too.
    expect(withExpiryOnly).toBeGreaterThan(3);
  });
});
