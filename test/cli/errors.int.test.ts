/**
 * What a user sees when something goes wrong: one line on stderr, no stack
 * trace, and the documented exit code (1 refused, 2 usage or connection),
 * for the failures people actually ran into.
 */
import { createServer, type AddressInfo } from "node:net";
import { describe, expect, inject, it } from "vitest";
import { startTestService, uniquePrefix } from "../support/nats.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { defer, freePort, leasehold, startLocalServe, tempDir, type Proc } from "./cli-process.ts";

/** Runs the command to its end and checks the one-line rule. */
async function fails(args: string[], code: number, env: Record<string, string> = {}): Promise<string> {
  const proc: Proc = leasehold(args, { env });
  const exit = await proc.exited;
  expect(exit.code, proc.stderr()).toBe(code);
  const lines = proc.stderr().trim().split("\n");
  expect(lines, proc.stderr()).toHaveLength(1);
  expect(proc.stderr()).not.toMatch(/\n\s+at /);
  expect(proc.stdout()).not.toMatch(/\n\s+at /);
  return lines[0]!;
}

describe("one-line errors and exit codes", () => {
  it("serve --nats not-a-url: one line naming the flag, exit 2", async () => {
    expect(await fails(["serve", "--nats", "not-a-url"], 2)).toMatch(/^leasehold serve: --nats: "not-a-url" is not a NATS URL/);
  });

  it("serve --nats nats://127.0.0.1:1: connection refused in one line, exit 2", async () => {
    expect(await fails(["serve", "--nats", "nats://127.0.0.1:1"], 2)).toMatch(
      /^leasehold serve: cannot connect to NATS at nats:\/\/127\.0\.0\.1:1: connection refused/,
    );
  });

  it("reads the server list from NATS_URL too, and checks every entry", async () => {
    expect(await fails(["serve"], 2, { NATS_URL: "nats://127.0.0.1:1, ftp://x" })).toMatch(/--nats: "ftp:\/\/x" is not a NATS URL/);
  });

  it("serve --http on a taken port: one line naming --http, exit 2", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    defer(() => new Promise<void>((resolve) => taken.close(() => resolve())));
    const listen = `127.0.0.1:${(taken.address() as AddressInfo).port}`;
    expect(
      await fails(["serve", "--nats", inject("natsUrl"), "--prefix", uniquePrefix(), "--http", listen, "--log-format", "text"], 2),
    ).toBe(
      `leasehold serve: --http: ${listen} is already in use; pick a free port with --http <host:port>, or turn it off with --http off`,
    );
  });

  it("serve with its own nats-server and --http on a taken port: refused before the nats-server starts", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    defer(() => new Promise<void>((resolve) => taken.close(() => resolve())));
    const listen = `127.0.0.1:${(taken.address() as AddressInfo).port}`;
    const dataDir = join(tempDir("http-taken"), "data");
    const proc = leasehold(["serve", "--nats-port", String(await freePort()), "--data-dir", dataDir, "--http", listen]);
    expect((await proc.exited).code).toBe(2);
    expect(proc.stderr().trim()).toBe(
      `leasehold serve: --http: ${listen} is already in use; pick a free port with --http <host:port>, or turn it off with --http off`,
    );
    expect(proc.stdout()).not.toContain("started local nats-server");
    expect(existsSync(dataDir)).toBe(false);
  });

  it("call with a prefix the user may not send to names --prefix, in one line, exit 2", async () => {
    const serve = await startLocalServe("call-prefix");
    expect(await fails(["call", "--nats", serve.url, "--prefix", "billing", "lock.get", '{"name":"x"}'], 2)).toBe(
      "leasehold call: this NATS user may not send billing.v1.lock.get: check --prefix, or the user's permissions (leasehold nats-config --prefix billing)",
    );
  });

  it("a bad setting from the environment names the variable that set it", async () => {
    expect(await fails(["serve"], 2, { LEASEHOLD_LOCK_TTL_MS: "-1" })).toBe(
      "leasehold serve: --lock-ttl-ms: must be positive (set by LEASEHOLD_LOCK_TTL_MS)",
    );
    expect(await fails(["serve", "--lock-ttl-ms", "-1"], 2, { LEASEHOLD_LOCK_TTL_MS: "5" })).toBe(
      "leasehold serve: --lock-ttl-ms: must be positive",
    );
  });

  it("call with no service answering says so in one line, exit 2", async () => {
    const prefix = uniquePrefix();
    expect(await fails(["call", "--nats", inject("natsUrl"), "--prefix", prefix, "lock.get", '{"name":"x"}'], 2)).toBe(
      `leasehold call: no leasehold service answers ${prefix}.v1.lock.get (is a service running with prefix ${prefix}?)`,
    );
  });

  it("call refuses an unknown op itself (exit 2, naming the closest ops), without asking NATS", async () => {
    expect(await fails(["call", "--nats", "nats://127.0.0.1:1", "lock.aquire", "{}"], 2)).toBe(
      "leasehold call: unknown op lock.aquire: did you mean lock.acquire, proxy.acquire, route.acquire? (call --help lists them)",
    );
    expect(await fails(["call", "lock.frob"], 2)).toMatch(/^leasehold call: unknown op lock\.frob: did you mean lock\.\w+/);
  });

  it("a refused command exits 1 with the error body; --pretty indents a reply", async () => {
    const prefix = uniquePrefix();
    const svc = await startTestService(prefix);
    defer(() => svc.stop());
    const nats = ["--nats", inject("natsUrl"), "--prefix", prefix];

    const ok = leasehold(["call", ...nats, "--pretty", "lock.acquire", '{"name":"n","owner":"a"}']);
    expect((await ok.exited).code).toBe(0);
    expect(ok.stdout()).toMatch(/^\{\n {2}"lease": \{/);

    const refused = leasehold(["call", ...nats, "lock.acquire", '{"name":"n","owner":"b"}']);
    expect((await refused.exited).code).toBe(1);
    expect(JSON.parse(refused.stdout())).toMatchObject({ error: { code: "LEASE_EXISTS", owner: "a" } });
    expect(refused.stderr().trim()).toMatch(/^leasehold call: refused: 409 /);
  });

  it("usage errors exit 2 without a stack trace", async () => {
    // Run side by side: each is a process start, most of the time of this file.
    const cases: [string[], RegExp][] = [
      [["call", "--timeout-ms", "soon", "lock.get"], /--timeout-ms.*whole number/],
      [["serve", "--nats-port", "4x"], /--nats-port.*whole number/],
      [["serve", "--heap-growth-percent", "-5"], /--heap-growth-percent.*whole number >= 0/],
      [["serve", "--idle-collect-ms", "soon"], /--idle-collect-ms.*whole number >= 0/],
      [["serve", "--nats", "nats://127.0.0.1:1", "--lock-ttl-ms", "1e"], /--lock-ttl-ms/],
      [["call", "lock.get", "{not json"], /not JSON/],
      [["call", "lock"], /expected <kind>\.<op>/],
      [["frobnicate"], /unknown command/],
      [["serve", "--password", "x", "--nats", "nats://127.0.0.1:1"], /--password needs --user/],
      [["serve", "--user", "u", "--password", "p"], /need --nats/],
      [["status", "--creds", "/nonexistent/file.creds"], /--creds: cannot read \/nonexistent\/file\.creds: ENOENT/],
      [["call", "--nats", "nats://127.0.0.1:1", "--prefix", "a b", "lock.get"], /^leasehold call: --prefix: must be subject tokens/],
      [
        ["audit", "--nats", "nats://127.0.0.1:1", "--from", "5", "--to", "2"],
        /^leasehold audit: --from 5 comes after --to 2: nothing lies/,
      ],
    ];
    const runs = cases.map(([args, message]) => ({ args, message, proc: leasehold(args) }));
    for (const { args, message, proc } of runs) {
      expect((await proc.exited).code, args.join(" ")).toBe(2);
      expect(proc.stderr()).toMatch(message);
      expect(proc.stderr()).not.toMatch(/\n\s+at /);
    }
  });

  it("commander's usage errors name the command and its help, as every other failure does", async () => {
    const [unknownCommand, unknownFlag, badChoice] = await Promise.all([
      fails(["frob"], 2),
      fails(["serve", "--frob"], 2),
      fails(["replay", "--kind", "frob"], 2),
    ]);
    expect(unknownCommand).toBe("leasehold: unknown command 'frob' (leasehold --help lists the commands)");
    expect(unknownFlag).toBe("leasehold serve: unknown option '--frob' (leasehold serve --help lists its flags)");
    // No command, or help for one that does not exist: the program's help on stderr, as a usage error.
    for (const args of [[], ["help", "frob"]]) {
      const proc = leasehold(args);
      expect((await proc.exited).code, args.join(" ")).toBe(2);
      expect(proc.stderr()).toMatch(/^Usage: leasehold \[options\] \[command\]/);
    }
    expect(badChoice).toMatch(
      /^leasehold replay: option '--kind <kind>' argument 'frob' is invalid\..* \(leasehold replay --help lists its flags\)$/,
    );
  });

  it("--help and --version exit 0; call --help lists the ops", async () => {
    const help = leasehold(["call", "--help"]);
    expect((await help.exited).code).toBe(0);
    for (const op of ["lock.acquire", "lock.renew", "proxy.report", "host.set", "route.snapshot"]) expect(help.stdout()).toContain(op);
    const version = leasehold(["--version"]);
    expect((await version.exited).code).toBe(0);
  });

  it("--log-level debug shows the cause of a failure", async () => {
    const proc = leasehold(["serve", "--nats", "nats://127.0.0.1:1", "--log-level", "debug"]);
    expect((await proc.exited).code).toBe(2);
    expect(proc.stderr()).toMatch(/ECONNREFUSED/);
  });
});
