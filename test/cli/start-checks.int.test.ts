/**
 * `leasehold serve` checks every flag before it starts anything, and the
 * conditions a start meets on someone's NATS are one line with the fix: a
 * bad value of any flag `serve --help` lists is refused in one line naming
 * that flag, with nothing started (no data folder, no log line); a server
 * without JetStream, and a second instance joining without the service's
 * credentials, each get one line saying what to do.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { natsServerBinary } from "../../src/cluster/nats-server-binary.ts";
import { defer, freePort, leasehold, startLocalServe, tempDir, waitListening, type Proc } from "./cli-process.ts";

/** The value-taking flags of `serve --help`. */
async function serveFlags(): Promise<string[]> {
  const help = leasehold(["serve", "--help"]);
  expect((await help.exited).code).toBe(0);
  return [...help.stdout().matchAll(/^ {2}(--[a-z-]+) <[^>]+>/gm)].map((m) => m[1]!);
}

/** A value each flag refuses ("nonsense" unless that is a fine value for it). */
const BAD: Record<string, string> = {
  "--prefix": "a..b",
  "--data-dir": "/dev/null/x",
  "--nats-port": "99999",
  "--operators": "a/b/c",
  "--http-allowed-hosts": "evil.example/x",
};

/** Runs to the end and returns the one line of stderr; nothing may have been logged on stdout. */
async function oneLineFailure(proc: Proc, what: string): Promise<string> {
  const { code } = await proc.exited;
  expect(code, `${what}\n${proc.stderr()}`).toBe(2);
  const lines = proc.stderr().trim().split("\n");
  expect(lines, `${what}: one line`).toHaveLength(1);
  return lines[0]!;
}

describe("serve's start-up checks", () => {
  it("refuses a bad value of every flag in one line naming it, before anything starts", async () => {
    const flags = await serveFlags();
    expect(flags).toEqual(expect.arrayContaining(["--nats-port", "--http", "--lock-ttl-ms", "--log-format", "--data-dir"]));
    const dir = tempDir("flags");
    const port = await freePort();
    const failures: string[] = [];
    // A few at a time: each is a Node process start on a 2-core machine.
    for (let i = 0; i < flags.length; i += 4) {
      await Promise.all(
        flags.slice(i, i + 4).map(async (flag) => {
          const dataDir = join(dir, flag.slice(2));
          const args = ["serve", "--data-dir", dataDir, "--nats-port", String(port), "--log-format", "json", flag, BAD[flag] ?? "nonsense"];
          const proc = leasehold(args);
          // A flag checked too late lets the service start: say which, rather than hang until the test's timeout.
          const late = setTimeout(() => proc.child.kill("SIGKILL"), 20_000);
          void proc.exited.then(() => clearTimeout(late));
          const line = await oneLineFailure(proc, `${flag} ${BAD[flag] ?? "nonsense"}`);
          if (!line.includes(flag)) failures.push(`${flag}: ${line}`);
          expect(proc.stdout(), `${flag}: nothing started, nothing logged`).toBe("");
          if (flag !== "--data-dir") expect(existsSync(dataDir), `${flag}: no data folder made`).toBe(false);
        }),
      );
    }
    expect(failures).toEqual([]);
  }, 120_000);

  it("says a server has no JetStream, and how to turn it on, in one line (serve and the tools)", async () => {
    const port = await freePort();
    const server = spawn(await natsServerBinary(), ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
    defer(() => {
      server.kill("SIGKILL");
    });
    await waitListening(port);
    const url = `nats://127.0.0.1:${port}`;
    const line = await oneLineFailure(leasehold(["serve", "--nats", url]), url);
    expect(line).toMatch(new RegExp(`^leasehold serve: NATS at ${url} has no JetStream .*start nats-server with -js`));
    // The tools that read the stream say the same.
    for (const tool of ["status", "tail", "replay", "audit"]) {
      const toolLine = await oneLineFailure(leasehold([tool, "--nats", url]), url);
      expect(toolLine).toMatch(new RegExp(`^leasehold ${tool}: .*no JetStream for this user's account: start nats-server with -js`));
    }
  }, 60_000);

  it("tells a second instance without the service's credentials the command that joins", async () => {
    const { cwd, url } = await startLocalServe("join");
    const second = leasehold(["serve", "--nats", url, "--http", "off", "--log-format", "json"], { cwd });
    const line = await oneLineFailure(second, "second instance");
    expect(line).toMatch(/^leasehold serve: this NATS user may not (publish|subscribe) to \S+, which the service needs: /);
    expect(line).toContain(`LEASEHOLD_USER=leasehold LEASEHOLD_PASSWORD="$(cat .leasehold/service-password)"`);
  }, 60_000);
});
