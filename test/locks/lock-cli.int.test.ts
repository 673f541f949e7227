/**
 * `leasehold serve` as a supervisor runs it (docs/protocol.md, "Running the
 * service"): `node bin/leasehold.js serve` as a child process, ready when it
 * answers, logging its effective configuration, stopping cleanly on SIGTERM
 * with requests in flight, refusing bad settings, documenting its flags.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, inject, it, vi } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { exitOf } from "../support/child-exit.ts";
import { uniquePrefix } from "../support/nats.ts";
import { expectLease, expectOk, lockClient, srvAll, useLockHarness } from "../support/lock-fixtures.ts";

const h = useLockHarness();
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BIN = fileURLToPath(new URL("../../bin/leasehold.js", import.meta.url));

/** A spawned `leasehold` process with its captured output. */
interface Cli {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout(): string;
  output(): string;
}

/** Runs `node bin/leasehold.js <args>`, killed after the test if still running. */
function runCli(args: string[], env: Record<string, string> = {}): Cli {
  // Settings from the developer's environment must not leak into what is tested.
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("LEASEHOLD_") && k !== "NATS_URL"));
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...base, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const exited = exitOf(child);
  h.defer(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await exited;
    }
  });
  return { child, exited, stdout: () => stdout, output: () => `${stdout}\n${stderr}` };
}

/** The JSON log lines a process wrote to stdout so far. */
function logLines(cli: Cli): Record<string, unknown>[] {
  return cli
    .stdout()
    .split("\n")
    .filter((line) => line.trim().startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Waits until the service on `prefix` answers `$SRV.PING.leasehold` and a lock request. */
async function waitReady(nc: NatsConnection, prefix: string, cli: Cli): Promise<void> {
  await vi.waitFor(
    async () => {
      if (cli.child.exitCode !== null) throw new Error(`leasehold exited early:\n${cli.output()}`);
      const pings = await srvAll(nc, "$SRV.PING.leasehold");
      if (!pings.some((p) => p.metadata?.prefix === prefix)) throw new Error("not answering $SRV.PING yet");
    },
    { timeout: 20_000, interval: 100 },
  );
  expectOk(await lockClient(nc, prefix).get({ name: "readiness" }));
}

describe("leasehold serve", () => {
  it("serves, logs its effective config, and on SIGTERM answers the requests in flight and exits 0", async () => {
    const natsUrl = inject("natsUrl");
    const prefix = uniquePrefix();
    const cli = runCli(["serve", "--nats", natsUrl, "--prefix", prefix]);
    const nc = await h.connect();
    await waitReady(nc, prefix, cli);
    const locks = lockClient(nc, prefix, 15_000);

    const lease = expectLease(await locks.acquire({ name: "cli-lock", owner: "alice" }));
    expect(lease).toMatchObject({ name: "cli-lock", owner: "alice", generation: 1, ttlMs: 30_000 });

    const serving = logLines(cli).find((l) => l.msg === "leasehold serving");
    expect(serving, cli.output()).toBeDefined();
    expect(serving!.config).toMatchObject({
      nats: natsUrl,
      prefix,
      cooldownMs: 900_000,
      routeIdleMs: 1_800_000,
      lockTtlMs: 30_000,
      maxTtlMs: 30_000,
      sweepIntervalMs: 30_000,
      dedupWindowMs: 120_000,
    });

    // Several requests on their way (some queued behind each other on one lock) when SIGTERM arrives:
    // the process is frozen (SIGSTOP) while they are sent and the signal is queued, so none can be
    // answered before it; then it runs again.
    cli.child.kill("SIGSTOP");
    let answered = 0;
    const inFlight = [
      ...Array.from({ length: 12 }, (_, i) => locks.acquire({ name: `inflight-${i}`, owner: "bob" })),
      ...Array.from({ length: 12 }, () => locks.renew({ name: "cli-lock", owner: "alice", etag: lease.etag, requestId: "one-renew" })),
    ].map((p) => p.finally(() => answered++));
    await nc.flush();
    cli.child.kill("SIGTERM");
    expect(answered).toBe(0);
    cli.child.kill("SIGCONT");
    const replies = await Promise.all(inFlight);
    for (const r of replies.slice(0, 12)) expect(expectLease(r).generation).toBe(1);
    const renewals = replies.slice(12).map((r) => expectLease(r));
    for (const r of renewals) expect(r).toEqual(renewals[0]);

    expect(await cli.exited).toEqual({ code: 0, signal: null });

    // What was answered is in the stream.
    const subjects = new Subjects(prefix);
    const log = await JetStreamEventLog.attach(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
    for (let i = 0; i < 12; i++) expect(await log.readSubject(subjects.event("lock", `inflight-${i}`), 1)).toHaveLength(1);
    expect(await log.readSubject(subjects.event("lock", "cli-lock"), 1)).toHaveLength(2);
    // After a clean stop nobody answers on the prefix.
    await expect(nc.request(`${prefix}.v1.lock.get`, '{"name":"x"}', { timeout: 2000 })).rejects.toThrow();
  });

  it("takes its default lock ttl from LEASEHOLD_LOCK_TTL_MS", async () => {
    const prefix = uniquePrefix();
    const cli = runCli(["serve", "--nats", inject("natsUrl"), "--prefix", prefix], { LEASEHOLD_LOCK_TTL_MS: "5000" });
    const nc = await h.connect();
    await waitReady(nc, prefix, cli);
    const lease = expectLease(await lockClient(nc, prefix).acquire({ name: "n", owner: "o" }));
    expect(lease.ttlMs).toBe(5000);
    expect(logLines(cli).find((l) => l.msg === "leasehold serving")?.config).toMatchObject({ lockTtlMs: 5000, maxTtlMs: 30_000 });
    cli.child.kill("SIGTERM");
    expect(await cli.exited).toEqual({ code: 0, signal: null });
  });

  it.each([
    [["--lock-ttl-ms", "0"], /--lock-ttl-ms.*positive/],
    [["--lock-ttl-ms", "60000"], /--lock-ttl-ms.*max-ttl-ms/],
    [["--max-ttl-ms", "soon"], /--max-ttl-ms/],
    [["--max-queued-requests", "5"], /--max-queued-requests: must be at least 10/],
    [["--max-active-requests", "0"], /--max-active-requests: must be at least 1/],
  ])("refuses %j with a non-zero exit and a message naming the flag", async (flags, message) => {
    const cli = runCli(["serve", "--nats", inject("natsUrl"), "--prefix", uniquePrefix(), ...flags]);
    const { code } = await cli.exited;
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(cli.output()).toMatch(message);
    expect(logLines(cli).some((l) => l.msg === "leasehold serving")).toBe(false);
  });

  it("--help lists every flag of the contract with its LEASEHOLD_* variable", async () => {
    const cli = runCli(["serve", "--help"]);
    expect((await cli.exited).code).toBe(0);
    const help = cli.output().replace(/\s+/g, " ");
    for (const flag of [
      "nats",
      "prefix",
      "cooldown-ms",
      "route-idle-ms",
      "lock-ttl-ms",
      "max-ttl-ms",
      "max-wait-ms",
      "claim-window-ms",
      "max-waiters",
      "max-waiting-acquires",
      "max-unknown-loads",
      "max-active-requests",
      "max-queued-requests",
      "sweep-interval-ms",
      "dedup-window-ms",
    ]) {
      expect(help).toContain(`--${flag}`);
      expect(help).toContain(`LEASEHOLD_${flag.toUpperCase().replaceAll("-", "_")}`);
    }
  });
});
