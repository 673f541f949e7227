/**
 * `leasehold serve` with its own nats-server, as a newcomer runs it: data in
 * ./.leasehold of the current folder, a second instance joining with the
 * service password from the data folder, nothing left running after SIGTERM
 * (also through npx, which does not pass SIGTERM on) or after serve is
 * SIGKILLed, and a busy port refused in one line instead of a silent attach.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { connect } from "@nats-io/transport-node";
import { createInbox, type NatsConnection } from "@nats-io/nats-core";
import { alive, BIN, defer, freePort, leasehold, run, tempDir, waitForLog, waitGone, ROOT, type Proc } from "./cli-process.ts";

/** Starts `serve` on its own nats-server and waits until it serves; returns the pids of both. */
async function serveLocal(
  port: number,
  options: { cwd?: string; args?: string[] } = {},
): Promise<{ proc: Proc; servePid: number; natsPid: number }> {
  // --http off: the dashboard's default port would be shared by every test that starts a local server.
  const proc = leasehold(["serve", "--nats-port", String(port), "--http", "off", ...(options.args ?? [])], { cwd: options.cwd });
  const started = await waitForLog(proc, "started local nats-server");
  const serving = await waitForLog(proc, "leasehold serving");
  return { proc, servePid: serving.pid as number, natsPid: started.pid as number };
}

/** `leasehold call` against the local server; resolves with its exit code and output. */
async function call(port: number, op: string, body: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = leasehold(["call", "--nats", `nats://127.0.0.1:${port}`, op, body]);
  const { code } = await proc.exited;
  return { code, stdout: proc.stdout(), stderr: proc.stderr() };
}

/** How many service instances answer `$SRV.PING.leasehold` within a second. */
async function instances(nc: NatsConnection): Promise<number> {
  const inbox = createInbox();
  const sub = nc.subscribe(inbox, { timeout: 1000 });
  const ids = new Set<string>();
  nc.publish("$SRV.PING.leasehold", "", { reply: inbox });
  setTimeout(() => sub.unsubscribe(), 1000);
  try {
    for await (const m of sub) ids.add(m.json<{ id: string }>().id);
  } catch {
    // the subscription's timeout: no (more) answers
  }
  return ids.size;
}

describe("serve with its own nats-server", () => {
  it("keeps its data in ./.leasehold of the current folder, lets a second instance join, and leaves nothing running after SIGTERM", async () => {
    const cwd = tempDir("serve");
    const port = await freePort();
    const first = await serveLocal(port, { cwd });
    const dataDir = join(cwd, ".leasehold");
    expect(existsSync(join(dataDir, "jetstream"))).toBe(true);
    // The password a second instance needs is readable by this user only.
    expect(statSync(join(dataDir, "service-password")).mode & 0o077).toBe(0);
    expect(statSync(join(dataDir, "append-password")).mode & 0o077).toBe(0);

    const acquired = await call(port, "lock.acquire", '{"name":"tour","owner":"me"}');
    expect(acquired.code, acquired.stderr).toBe(0);
    expect(JSON.parse(acquired.stdout)).toMatchObject({ lease: { name: "tour", owner: "me", generation: 1 } });

    // Without the service's credentials a second instance is refused in one line, exit 2 (it used to crash with a stack trace).
    const unauthorised = leasehold(["serve", "--nats", `nats://127.0.0.1:${port}`, "--http", "off"], { cwd });
    const refused = await unauthorised.exited;
    expect(refused.code, unauthorised.stderr()).toBe(2);
    const lines = unauthorised.stderr().trim().split("\n");
    expect(lines, unauthorised.stderr()).toHaveLength(1);
    expect(lines[0]).toMatch(/^leasehold serve: /);
    // It names the flags of the service's second user.
    expect(lines[0]).toMatch(/--append-user\/--append-password or --append-creds/);
    expect(unauthorised.stderr()).not.toMatch(/\n\s+at /);

    // The documented way to add an instance: the two service users, their passwords from the data folder.
    const password = readFileSync(join(dataDir, "service-password"), "utf8").trim();
    const appendPassword = readFileSync(join(dataDir, "append-password"), "utf8").trim();
    const second = leasehold(["serve", "--nats", `nats://127.0.0.1:${port}`], {
      cwd,
      env: {
        LEASEHOLD_USER: "leasehold",
        LEASEHOLD_PASSWORD: password,
        LEASEHOLD_APPEND_USER: "leasehold-append",
        LEASEHOLD_APPEND_PASSWORD: appendPassword,
        LEASEHOLD_HEAP_GROWTH_PERCENT: "50",
        LEASEHOLD_IDLE_COLLECT_MS: "1500",
      },
    });
    await waitForLog(second, "leasehold serving");
    // Memory before CPU, asked for (docs/operations.md, Memory): V8's heap growth is held once started.
    expect((await waitForLog(second, "heap growth held past each full collection")).v8Flag).toBe("--heap-growing-percent=50");
    // And the idle collection gives the spare back after the period asked for (docs/operations.md, Memory).
    expect((await waitForLog(second, "idle collection on")).idleMs).toBe(1500);
    const nc = await connect({ servers: `nats://127.0.0.1:${port}` });
    try {
      await vi.waitFor(async () => expect(await instances(nc)).toBe(2), { timeout: 10_000 });
    } finally {
      await nc.close();
    }
    // With the first stopped, the second still answers from the same stream.
    first.proc.child.kill("SIGTERM");
    expect(await first.proc.exited).toEqual({ code: 0, signal: null });
    await waitGone([first.servePid]);
    // Its nats-server went with it: the second instance's connection has nowhere to go now.
    await waitGone([first.natsPid]);
    // Its NATS is gone, yet the second instance stops within the 10 s its stop is allowed, exit 0.
    const stopAt = Date.now();
    second.child.kill("SIGTERM");
    expect(await second.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - stopAt).toBeLessThan(11_000);
    expect(readdirSync(dataDir).filter((f) => f.endsWith(".ports"))).toEqual([]);
  });

  it("its nats-server does not outlive a SIGKILLed serve", async () => {
    const cwd = tempDir("kill");
    const { proc, natsPid } = await serveLocal(await freePort(), { cwd });
    proc.child.kill("SIGKILL");
    await proc.exited;
    await waitGone([natsPid], 10_000);
  });

  it("started through npx and sent SIGTERM (npx exits without passing it on), leaves no process behind", async () => {
    const dataDir = join(tempDir("npx"), "data");
    const port = await freePort();
    const npx = run("npx", ["leasehold", "serve", "--nats-port", String(port), "--data-dir", dataDir, "--http", "off"], { cwd: ROOT });
    const started = await waitForLog(npx, "started local nats-server");
    const serving = await waitForLog(npx, "leasehold serving");
    const pids = [npx.child.pid!, serving.pid as number, started.pid as number];
    expect(pids.every(alive)).toBe(true);
    npx.child.kill("SIGTERM");
    await waitGone(pids, 12_000);
    expect(existsSync(join(dataDir, `nats-server_${started.pid as number}.ports`))).toBe(false);
  });

  it("refuses a busy port in one line naming the port and the flags, exit 2, starting nothing", async () => {
    const cwd = tempDir("busy");
    const blocker = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    defer(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
    const port = (blocker.address() as { port: number }).port;
    const proc = leasehold(["serve", "--nats-port", String(port)], { cwd });
    expect((await proc.exited).code).toBe(2);
    const lines = proc.stderr().trim().split("\n");
    expect(lines, proc.stderr()).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(`leasehold serve: port ${port} .*already in use.*--nats-port.*--nats nats://127\\.0\\.0\\.1:${port}`),
    );
    expect(proc.stdout()).not.toContain("started local nats-server");
    expect(proc.stdout()).not.toContain("leasehold serving");
  });

  it("refuses a data folder whose nats-server still runs on another port: one line, exit 2, its configuration untouched", async () => {
    const cwd = tempDir("shared");
    const port = await freePort();
    const first = await serveLocal(port, { cwd });
    const config = join(cwd, ".leasehold", "nats-server.conf");
    const before = readFileSync(config, "utf8");
    const second = leasehold(["serve", "--nats-port", String(await freePort()), "--http", "off"], { cwd });
    expect((await second.exited).code).toBe(2);
    const lines = second.stderr().trim().split("\n");
    expect(lines, second.stderr()).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^leasehold serve: --data-dir .*\\.leasehold is in use by the nats-server \\(pid ${first.natsPid}\\) of another leasehold serve on nats://127\\.0\\.0\\.1:${port}: .*--data-dir of its own.*node ${BIN} serve --nats nats://127\\.0\\.0\\.1:${port}$`,
      ),
    );
    expect(second.stdout()).not.toContain("started local nats-server");
    expect(readFileSync(config, "utf8")).toBe(before);
    expect(alive(first.natsPid)).toBe(true);
  });

  it("stops in one line, exit 2, when its nats-server dies under it, instead of waiting for it forever", async () => {
    const cwd = tempDir("died");
    const { proc, natsPid } = await serveLocal(await freePort(), { cwd });
    process.kill(natsPid, "SIGKILL");
    expect((await proc.exited).code).toBe(2);
    expect(proc.stderr().trim().split("\n")).toEqual([
      expect.stringMatching(
        new RegExp(
          `^leasehold serve: its nats-server \\(pid ${natsPid}\\) exited \\(code \\d+\\), so serve stops; the data in \\./\\.leasehold is kept: start serve again$`,
        ),
      ),
    ]);
  });

  it("names the way to join when the port is held by this data folder's own nats-server", async () => {
    const cwd = tempDir("join");
    const port = await freePort();
    await serveLocal(port, { cwd });
    const again = leasehold(["serve", "--nats-port", String(port)], { cwd });
    expect((await again.exited).code).toBe(2);
    expect(again.stderr().trim().split("\n")).toHaveLength(1);
    expect(again.stderr()).toMatch(
      /LEASEHOLD_USER=leasehold LEASEHOLD_PASSWORD="\$\(cat .*service-password\)" LEASEHOLD_APPEND_USER=leasehold-append LEASEHOLD_APPEND_PASSWORD="\$\(cat .*append-password\)" node \S+\/bin\/leasehold\.js serve --nats/,
    );
    // Started through npx, it names npx: `leasehold` alone is on no PATH in a clone.
    const viaNpx = run("npx", ["leasehold", "serve", "--nats-port", String(port), "--data-dir", join(cwd, ".leasehold")], { cwd: ROOT });
    expect((await viaNpx.exited).code).toBe(2);
    expect(viaNpx.stderr()).toMatch(/append-password\)" npx leasehold serve --nats nats:\/\/127\.0\.0\.1:\d+$/m);
  });
});
