/**
 * examples/python/leasehold_lock.py, a Python client on the wire contract
 * alone (nats-py), run as a process against `leasehold serve` as a process on
 * the account layout `nats-config` writes: alice acquires, bob reads her etag
 * and is still refused `FORBIDDEN` (a `ForbiddenError` naming him) when he
 * renews or releases with it, alice renews, an operator releases. A service
 * that requires a principal refuses a client NATS names none for
 * `UNAUTHENTICATED` (an `UnauthenticatedError`). It needs python3 with
 * nats-py (.ci/run installs it) and fails, saying so, without them.
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERROR_CODES } from "../../src/contract/errors.ts";
import type { NatsConfigOptions } from "../../src/security/nats-permissions.ts";
import { defer, ROOT, run } from "../cli/cli-process.ts";
import { natsUrl, startTestService, uniquePrefix } from "../support/nats.ts";
import { passwordOf, serveProcessOn, startLayoutNats, type LayoutNats } from "../security/layout-server.ts";

/** The interpreter asked for (PYTHON, else python3 on the PATH), and the binary behind it once found. */
const ASKED = process.env.PYTHON ?? "python3";
let PYTHON = ASKED;
const SCRIPT = join(ROOT, "examples/python/leasehold_lock.py");
const PREFIX = "acme.py";
const OPTIONS: NatsConfigOptions = { prefix: PREFIX, layout: "accounts", clients: ["alice", "bob"], operators: ["ops"] };

/**
 * Fails, naming the fix, unless the interpreter can import nats-py; then runs
 * its binary directly (a version manager's shim costs each run a shell).
 */
async function requirePythonWithNats(): Promise<void> {
  try {
    const { stdout } = await promisify(execFile)(ASKED, ["-c", "import nats, sys; print(sys.executable)"], { timeout: 30_000 });
    PYTHON = stdout.trim() || ASKED;
  } catch (e) {
    throw new Error(
      `the Python interop test needs ${ASKED} with nats-py: pip install --no-index --find-links /opt/pypi/files nats-py ` +
        `(.ci/run does this); ${(e as Error).message}`,
    );
  }
}

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the script as `user` (undefined: no credentials) against `url`. */
async function python(url: string, prefix: string, user: string | undefined, args: string[]): Promise<Run> {
  const env: Record<string, string> = user === undefined ? {} : { LEASEHOLD_USER: user, LEASEHOLD_PASSWORD: passwordOf(user) };
  const proc = run(PYTHON, [SCRIPT, "--nats", url, "--prefix", prefix, ...args], { env });
  const { code } = await proc.exited;
  return { code, stdout: proc.stdout(), stderr: proc.stderr() };
}

const leaseOf = (r: Run) => {
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { lease: { etag: string; owner: string; generation: number } | null }).lease;
};

beforeAll(requirePythonWithNats, 60_000);

describe("the Python client", () => {
  it("has an exception class for every code of the contract", async () => {
    // -B: no __pycache__ written into examples/python.
    const printed = await promisify(execFile)(
      PYTHON,
      ["-B", "-c", "import json, leasehold_lock as l; print(json.dumps({c: k.__name__ for c, k in l.ERROR_CLASSES.items()}))"],
      { cwd: join(ROOT, "examples/python"), timeout: 30_000 },
    );
    const classes = JSON.parse(printed.stdout) as Record<string, string>;
    const pascal = (code: string) => code.toLowerCase().replace(/(^|_)([a-z])/g, (_m, _s, c: string) => c.toUpperCase());
    expect(classes).toEqual(Object.fromEntries(ERROR_CODES.map((code) => [code, `${pascal(code)}Error`])));
  });

  let layout: LayoutNats | undefined;
  afterAll(() => layout?.stop());

  it("on the account layout: bob with alice's etag is FORBIDDEN, an operator may release", async () => {
    layout = await startLayoutNats({ options: OPTIONS });
    const url = layout.url;
    await serveProcessOn(url, OPTIONS);
    const as = (user: string, args: string[]) => python(url, PREFIX, user, args);

    const lease = leaseOf(await as("alice", ["acquire", "reports", "--owner", "worker-a", "--ttl-ms", "20000"]));
    expect(lease).toMatchObject({ owner: "worker-a", generation: 1 });
    // The etag is no secret: bob reads it...
    expect(leaseOf(await as("bob", ["get", "reports"]))?.etag).toBe(lease!.etag);
    // ...and holding it does not make him the holder.
    const refusals = await Promise.all([
      as("bob", ["renew", "reports", "--owner", "worker-a", "--etag", lease!.etag]),
      as("bob", ["release", "reports", "--etag", lease!.etag]),
    ]);
    for (const refused of refusals) {
      expect(refused.code, refused.stdout).toBe(1);
      expect(refused.stderr).toMatch(/^ForbiddenError: FORBIDDEN \(403\): .*\{"principal": "bob\/bob"\}\n$/);
    }
    const renewed = leaseOf(await as("alice", ["renew", "reports", "--owner", "worker-a", "--etag", lease!.etag]));
    expect(renewed).toMatchObject({ owner: "worker-a", generation: 1 });
    // An operator (--operators ops/*) may release anyone's lease.
    const released = await as("ops", ["release", "reports", "--etag", renewed!.etag]);
    expect(released.code, released.stderr).toBe(0);
    expect(leaseOf(await as("alice", ["get", "reports"]))).toBeNull();
    const again = await as("alice", ["release", "reports", "--etag", renewed!.etag]);
    expect(again.stderr).toMatch(/^AlreadyReleasedError: ALREADY_RELEASED \(410\)/);
    // An inbox the layout does not give bob: the server refuses it, and no answer comes (exit 3).
    const noInbox = await as("bob", ["--inbox-prefix", "_INBOX", "--timeout-ms", "500", "get", "reports"]);
    expect(noInbox.code, noInbox.stderr).toBe(3);
    expect(noInbox.stderr).toMatch(/Permissions Violation for Subscription to "_INBOX\./i);
    expect(noInbox.stderr).toMatch(/--inbox-prefix _INBOX_bob/);
    expect(noInbox.stderr).toMatch(/^NoAnswerError: no answer on acme\.py\.v1\.lock\.get \(timed out after 0\.5 s\)/m);
  }, 60_000);

  it("is refused UNAUTHENTICATED where the service requires a principal and NATS names none", async () => {
    const prefix = uniquePrefix();
    // A server without accounts stands in for a request that crossed no import (the start's $G check is what it would meet).
    const service = await startTestService(prefix, {
      principals: "nats-request-info",
      requirePrincipal: true,
      principalSourceCheck: false,
    });
    defer(() => service.stop());
    const refused = await python(natsUrl(), prefix, undefined, ["acquire", "reports", "--owner", "worker-a"]);
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.stderr).toMatch(/^UnauthenticatedError: UNAUTHENTICATED \(401\): /);
  });
});
