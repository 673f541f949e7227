/**
 * `leasehold tail` against a real service: it follows the stream live (new
 * events only by default), narrows to a kind or an actor, starts at an
 * instant or a duration ago with --since, prints raw JSON with --json, and
 * stops on --limit or SIGINT with exit 0.
 */
import { describe, expect, it, vi } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { call, natsUrl, uniquePrefix } from "../support/nats.ts";
import { useTestServices } from "../support/cleanup.ts";
import { okSender } from "../support/replies.ts";
import { runCli, startCli, type CliProcess } from "./support/cli.ts";
import { connect } from "@nats-io/transport-node";
import { startLocalNatsServer } from "../../src/cluster/local-cluster.ts";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";

const h = useTestServices();

async function setup(): Promise<{
  prefix: string;
  nc: NatsConnection;
  send: (kindOp: string, body: unknown) => Promise<Record<string, unknown>>;
}> {
  const prefix = uniquePrefix();
  await h.service(prefix);
  const nc = await h.connect();
  return { prefix, nc, send: okSender(nc, prefix) };
}

function tail(args: string[]): CliProcess {
  const cli = startCli(["tail", "--nats", natsUrl(), ...args]);
  h.defer(() => cli.kill());
  return cli;
}

const ready = (cli: CliProcess) =>
  vi.waitFor(() => expect(cli.stderr()).toContain("leasehold tail: following"), { timeout: 15_000, interval: 20 });

describe("leasehold tail", () => {
  it("follows new events of one kind live, one readable line each, and exits 0 after --limit", async () => {
    const { prefix, send } = await setup();
    await send("lock.acquire", { name: "old", owner: "w0" });
    const cli = tail(["--prefix", prefix, "--kind", "lock", "--limit", "3"]);
    await ready(cli);
    expect(cli.stderr()).toMatch(new RegExp(`following T\\w+_EVENTS \\(${prefix}\\.events\\.lock\\.\\*\\) from sequence 2`));
    const lease = (await send("lock.acquire", { name: "reports/nightly", owner: "worker-a", ttlMs: 15000, requestId: "r-17" })).lease as {
      etag: string;
    };
    await send("proxy.register", { proxy: "p1", maxLeases: 1 });
    await send("lock.renew", { name: "reports/nightly", owner: "worker-a", etag: lease.etag });
    await send("lock.release", { name: "reports/nightly", etag: "stale" }).catch(() => undefined);
    await send("lock.reset", { name: "db" });
    expect(await cli.exited).toBe(0);
    const lines = cli.stdout().trim().split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^\S+Z #2 lock reports\/nightly LockAcquired owner=worker-a generation=1 ttlMs=15000 expiresAt=\S+Z previousOwner="" requestId=r-17$/,
    );
    expect(lines[1]).toMatch(/^\S+Z #4 lock reports\/nightly LockRenewed owner=worker-a generation=1 ttlMs=15000 expiresAt=\S+Z$/);
    expect(lines[2]).toMatch(/^\S+Z #5 lock db LockReset generation=0$/);
  });

  it("--since an instant prints what was stored since then, narrowed to one actor, as --json; --since a duration ago too", async () => {
    const { prefix, nc, send } = await setup();
    // Before the host is set this acquire fails, and records the candidate it saw.
    expect((await call(nc, prefix, "route.acquire", { route: "checkout", fp: "", model: "m", candidates: ["gpu-a"] })).code).toBe(
      "NO_HOST",
    );
    await send("host.set", { host: "gpu-a", healthy: true });
    const before = Date.now();
    await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(before), { interval: 1 });
    const since = new Date(Date.now()).toISOString();
    await vi.waitFor(() => expect(Date.now()).toBeGreaterThan(Date.parse(since)), { interval: 1 });
    await send("route.acquire", { route: "search", fp: "", model: "m", candidates: ["gpu-a"] });
    await send("route.acquire", { route: "checkout", fp: "", model: "m", candidates: ["gpu-a"] });
    await send("route.pin", { route: "checkout", host: "gpu-a" });

    const json = await runCli([
      "tail",
      "--nats",
      natsUrl(),
      "--prefix",
      prefix,
      "--kind",
      "route",
      "--id",
      "checkout",
      "--since",
      since,
      "--json",
      "--limit",
      "2",
    ]);
    expect(json.code, json.stderr).toBe(0);
    const events = json.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { seq: number; subject: string; storedAt: string; event: { type: string; id: string } });
    expect(events.map((e) => [e.seq, e.subject, e.event.type, e.event.id])).toEqual([
      [4, `${prefix}.events.route.checkout`, "RouteLeasePlaced", "checkout"],
      [5, `${prefix}.events.route.checkout`, "RoutePinned", "checkout"],
    ]);
    for (const e of events) expect(Date.parse(e.storedAt)).toBeGreaterThanOrEqual(Date.parse(since));

    const ago = await runCli(["tail", "--nats", natsUrl(), "--prefix", prefix, "--since", "1h", "--limit", "5"]);
    expect(ago.code, ago.stderr).toBe(0);
    expect(
      ago.stdout
        .trim()
        .split("\n")
        .map((l) => l.split(" ").slice(1, 5).join(" ")),
    ).toEqual([
      "#1 route checkout RouteCandidatesSeen",
      "#2 host gpu-a HostStateSet",
      "#3 route search RouteLeasePlaced",
      "#4 route checkout RouteLeasePlaced",
      "#5 route checkout RoutePinned",
    ]);
  });

  it("runs until SIGINT, then exits 0; --id without --kind is a usage error", async () => {
    const { prefix, send } = await setup();
    const cli = tail(["--prefix", prefix]);
    await ready(cli);
    await send("host.set", { host: "h", healthy: true });
    await vi.waitFor(() => expect(cli.stdout()).toContain("host h HostStateSet healthy=true draining=false"), {
      timeout: 10_000,
      interval: 20,
    });
    cli.child.kill("SIGINT");
    expect(await cli.exited).toBe(0);

    const usage = await runCli(["tail", "--nats", natsUrl(), "--prefix", prefix, "--id", "h"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("--id needs --kind");
  });

  it("says in one line, exit 2, that NATS went away, rather than end as if it were done", async () => {
    const server = await startLocalNatsServer();
    h.defer(() => server.stop());
    const nc = await connect({ servers: [...server.urls] });
    h.defer(() => nc.close());
    const subjects = new Subjects(uniquePrefix());
    await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
    const cli = startCli(["tail", "--nats", server.urls[0]!, "--prefix", subjects.prefix]);
    h.defer(() => cli.kill());
    await ready(cli);
    await server.kill(0, "SIGKILL");
    expect(await cli.exited).toBe(2);
    expect(cli.stderr().trim().split("\n").slice(1)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^leasehold tail: lost the connection to NATS at ${server.urls[0]!} \\(.*\\) after 0 events: run tail again \\(--from-seq`,
        ),
      ),
    ]);
  });
});
