/**
 * While NATS goes away and comes back, `leasehold serve` on a terminal says
 * so in two lines, one when the connection is lost and one when it is back,
 * and nothing else: the followers it re-creates after the reconnect are
 * routine, and no stack trace is printed for them.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { describe, expect, it, vi } from "vitest";
import { natsServerBinary } from "../../src/cluster/nats-server-binary.ts";
import { textLine } from "../../src/cli/logging.ts";
import { defer, freePort, leasehold, tempDir, waitListening } from "./cli-process.ts";

async function startServer(binary: string, port: number, store: string): Promise<ChildProcess> {
  const server = spawn(binary, ["-js", "-sd", store, "-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
  defer(() => {
    server.kill("SIGKILL");
  });
  await waitListening(port);
  return server;
}

describe("serve's log of a NATS outage", () => {
  it("is one line when the connection is lost and one when it is back, without stack traces", async () => {
    const binary = await natsServerBinary();
    const port = await freePort();
    const store = tempDir("reconnect-store");
    const first = await startServer(binary, port, store);
    const serve = leasehold(["serve", "--nats", `nats://127.0.0.1:${port}`, "--http", "off", "--log-format", "text"], {
      cwd: tempDir("reconnect"),
    });
    defer(async () => {
      serve.child.kill("SIGTERM");
      await serve.exited;
    });
    await vi.waitFor(() => expect(serve.stderr()).toMatch(/serving on/), { timeout: 30_000, interval: 50 });
    const ready = serve.stderr().length;

    first.kill("SIGTERM");
    await vi.waitFor(() => expect(serve.stderr().slice(ready)).toMatch(/NATS connection lost/), { timeout: 30_000, interval: 50 });
    await startServer(binary, port, store);
    await vi.waitFor(() => expect(serve.stderr().slice(ready)).toMatch(/NATS connection back/), { timeout: 30_000, interval: 50 });
    // A lock taken and read back through the service: its followers are past the reconnect, whatever they logged about it.
    const url = `nats://127.0.0.1:${port}`;
    await vi.waitFor(
      async () => {
        // The same requestId: a retry after an UNAVAILABLE is answered as the first acquire that got through.
        const acquire = leasehold(["call", "--nats", url, "lock.acquire", '{"name":"after-outage","owner":"me","requestId":"r1"}']);
        expect((await acquire.exited).code, acquire.stderr()).toBe(0);
        const get = leasehold(["call", "--nats", url, "lock.get", '{"name":"after-outage"}']);
        expect((await get.exited).code, get.stderr()).toBe(0);
        expect(get.stdout()).toMatch(/"owner":"me"/);
      },
      { timeout: 30_000, interval: 200 },
    );

    const lines = serve.stderr().slice(ready).trim().split("\n");
    expect(lines).toEqual([
      expect.stringMatching(/^leasehold: warn: NATS connection lost; reconnecting .*\(server=127\.0\.0\.1:\d+\)$/),
      expect.stringMatching(/^leasehold: warn: NATS connection back \(server=127\.0\.0\.1:\d+ awayMs=\d+\)$/),
    ]);
  }, 90_000);

  it("prints an error as its message; the stack only at debug", () => {
    const record = { level: 40, msg: "sweep failed", err: { message: "timeout", stack: "Error: timeout\n    at x.js:1:1" } };
    expect(textLine(record)).toBe("leasehold: warn: sweep failed (err=timeout)");
    expect(textLine(record, true)).toBe("leasehold: warn: sweep failed\nError: timeout\n    at x.js:1:1");
  });
});
