/**
 * `leasehold replay` against a real service's history. A scripted session
 * runs through a real service (proxies, hosts, routes, locks); after each
 * step the test records what the service answers and when. With the service
 * stopped, replaying the stream at each recorded instant (the library, and
 * the command with --json at an instant in the middle of the history) gives
 * exactly those answers: a proxy lease that expired with no event included.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { Subjects } from "../../src/contract/subjects.ts";
import { foldStream, replayInstant, replayView, type ReplayView } from "../../src/tools/replay.ts";
import { call, natsUrl, startTestService, uniquePrefix, type TestService } from "../support/nats.ts";
import { openEventLog, runCli } from "./support/cli.ts";
import { connectNats } from "../support/nats.ts";

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

const LOCKS = ["db", "reports/nightly"];
const ROUTES = ["checkout", "search"];

interface Recorded {
  readonly step: string;
  /** When the last answer arrived: every event of the steps so far is stored by then, and none of later steps. */
  readonly at: number;
  readonly answers: Record<string, unknown>;
}

/** What the service answers to every read, right now. */
async function readAll(nc: NatsConnection, prefix: string): Promise<Record<string, unknown>> {
  const ok = async (kindOp: string, body: unknown) => {
    const r = await call(nc, prefix, kindOp, body);
    expect(r.status, `${kindOp}: ${JSON.stringify(r.body)}`).toBeUndefined();
    return r.body;
  };
  const answers: Record<string, unknown> = {
    "proxy.list": await ok("proxy.list", {}),
    "proxy.counts": await ok("proxy.counts", {}),
    "host.list": await ok("host.list", {}),
    "route.snapshot": await ok("route.snapshot", {}),
  };
  for (const route of ROUTES) answers[`route.get ${route}`] = await ok("route.get", { route });
  for (const name of LOCKS) answers[`lock.get ${name}`] = await ok("lock.get", { name });
  return answers;
}

/** The same reads, answered from a replay view. */
function answersFrom(view: ReplayView): Record<string, unknown> {
  const answers: Record<string, unknown> = {
    "proxy.list": { proxies: view.proxies },
    "proxy.counts": { counts: Object.fromEntries(view.proxies!.filter((p) => p.active > 0).map((p) => [p.proxy, p.active])) },
    // Loads are not events: the service, with no host publishing one, answers null, and the stream has none to replay.
    "host.list": { hosts: view.hosts!.map((h) => ({ ...h, load: null })) },
    "route.snapshot": { leases: view.routes!.flatMap((r) => r.leases) },
  };
  for (const route of ROUTES) {
    const r = view.routes!.find((x) => x.route === route);
    answers[`route.get ${route}`] = { pinned: r?.pinned ?? "", leases: r?.leases ?? [] };
  }
  for (const name of LOCKS)
    answers[`lock.get ${name}`] = {
      lease: view.locks!.find((l) => l.name === name)?.lease ?? null,
      waiters: view.locks!.find((l) => l.name === name)?.waiters ?? 0,
    };
  return answers;
}

describe("leasehold replay", () => {
  it("at an instant in the middle of a recorded history equals what the service answered then, with the service stopped", async () => {
    const prefix = uniquePrefix();
    const svc: TestService = await startTestService(prefix, { cooldownMs: 60_000 });
    cleanup.push(() => svc.stop());
    const nc = await connectNats();
    cleanup.push(() => nc.close());
    const send = async (kindOp: string, body: unknown) => {
      const r = await call(nc, prefix, kindOp, body);
      expect(r.status, `${kindOp}: ${JSON.stringify(r.body)}`).toBeUndefined();
      return r.body;
    };

    const recorded: Recorded[] = [];
    const step = async (name: string, run: () => Promise<unknown>) => {
      // The next event must be stored after the previous answer's instant (the stream's clock has millisecond steps).
      const previous = recorded.at(-1)?.at ?? 0;
      await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(previous), { interval: 1 });
      await run();
      const answers = await readAll(nc, prefix);
      recorded.push({ step: name, at: Date.now(), answers });
    };

    await step("proxies registered", async () => {
      await send("proxy.register", { proxy: "eu-1", maxLeases: 2, latencyMs: 20, labels: { region: "eu" } });
      await send("proxy.register", { proxy: "us-1", maxLeases: 1, latencyMs: 40, labels: { region: "us" } });
    });
    await step("hosts set", async () => {
      await send("host.set", { host: "gpu-a", healthy: true });
      await send("host.set", { host: "gpu-b", healthy: true });
    });
    let etag = "";
    await step("lock acquired", async () => {
      etag = ((await send("lock.acquire", { name: "db", owner: "worker-a", ttlMs: 30_000 })) as { lease: { etag: string } }).lease.etag;
    });
    let leaseId = "";
    await step("proxy leased", async () => {
      leaseId = ((await send("proxy.acquire", { ttlMs: 60_000, target: "shop.example" })) as { lease: { id: string } }).lease.id;
    });
    await step("routes placed", async () => {
      await send("route.acquire", { route: "checkout", fp: "", model: "m1", candidates: ["gpu-a", "gpu-b"] });
      await send("route.acquire", { route: "checkout", fp: "conv-1", model: "m1", candidates: ["gpu-a", "gpu-b"] });
      await send("route.acquire", { route: "search", fp: "", model: "m2", candidates: ["gpu-a", "gpu-b"] });
    });
    await step("proxy reported rate limited", () => send("proxy.report", { leaseId, result: "rate_limited" }));
    await step("short proxy lease", () => send("proxy.acquire", { ttlMs: 300, labels: { region: "us" } }));
    // Nothing is written while the short lease runs out: only the clock moves.
    await step("short proxy lease expired", () =>
      vi.waitFor(async () => expect((await call(nc, prefix, "proxy.counts", {})).body).toEqual({ counts: { "eu-1": 1 } }), {
        timeout: 10_000,
        interval: 50,
      }),
    );
    await step("lock renewed, host draining, route pinned", async () => {
      etag = ((await send("lock.renew", { name: "db", owner: "worker-a", etag })) as { lease: { etag: string } }).lease.etag;
      await send("host.set", { host: "gpu-a", healthy: true, draining: true });
      await send("route.pin", { route: "search", host: "gpu-b" });
    });
    await step("lock handed over, proxy released, lease moved", async () => {
      await send("lock.release", { name: "db", etag });
      await send("lock.acquire", { name: "db", owner: "worker-b", ttlMs: 20_000 });
      await send("lock.acquire", { name: "reports/nightly", owner: "worker-c" });
      await send("proxy.release", { leaseId });
      await send("route.move", { route: "checkout", fp: "conv-1", model: "m1", host: "gpu-b" });
    });
    await step("host unhealthy, route released", async () => {
      await send("host.set", { host: "gpu-b", healthy: false });
      await send("route.release", { route: "checkout" });
    });

    await svc.stop();
    // Nobody answers any more: what follows reads only the stream.
    await expect(nc.request(`${prefix}.v1.proxy.list`, "{}", { timeout: 500 })).rejects.toThrow();

    const subjects = new Subjects(prefix);
    const log = await openEventLog(nc, prefix);
    for (const r of recorded) {
      const range = { toTime: r.at };
      const fold = await foldStream(log.readStream(), subjects, range);
      expect(answersFrom(replayView(fold, replayInstant(fold, range, Date.now()))), `replay at "${r.step}"`).toEqual(r.answers);
    }
    // The expiry step wrote nothing: its replay differs from the one before only by the instant.
    const [before, after] = recorded.filter((r) => r.step.startsWith("short proxy lease"));
    expect(after!.answers["proxy.counts"]).not.toEqual(before!.answers["proxy.counts"]);

    // The command, at an instant in the middle of the history.
    const middle = recorded.find((r) => r.step === "short proxy lease expired")!;
    expect(recorded.indexOf(middle)).toBeGreaterThan(2);
    expect(recorded.indexOf(middle)).toBeLessThan(recorded.length - 2);
    const cli = await runCli(["replay", "--nats", natsUrl(), "--prefix", prefix, "--at", new Date(middle.at).toISOString(), "--json"]);
    expect(cli.code, cli.stderr).toBe(0);
    const view = JSON.parse(cli.stdout) as ReplayView;
    expect(view.at).toBe(new Date(middle.at).toISOString());
    expect(answersFrom(view)).toEqual(middle.answers);

    // And as tables, narrowed to one lock, at the end.
    const table = await runCli(["replay", "--nats", natsUrl(), "--prefix", prefix, "--kind", "lock", "--id", "db"]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(
      new RegExp(`^state of ${subjects.eventStream} at \\S+Z \\(through sequence \\d+, \\d+ messages folded\\)\\n\\nLOCKS \\(1\\)\\n`),
    );
    expect(table.stdout).toMatch(/\n {2}db +(held|expired) +worker-b +2 +\w{8} +\S+Z +\S+ +0\n/);
    expect(table.stdout).not.toContain("PROXIES");
  });

  it("exits 2 with a message for a bad --at and for a prefix without a stream", async () => {
    const bad = await runCli(["replay", "--nats", natsUrl(), "--at", "2026-13-45"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("leasehold replay: --at: expected an RFC 3339 instant");
    const missing = await runCli(["replay", "--nats", natsUrl(), "--prefix", uniquePrefix()]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no event stream \w+_EVENTS/);
  });
});
