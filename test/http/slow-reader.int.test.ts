/**
 * A dashboard client that does not read what it is sent (a laptop asleep
 * with the tab open, or on purpose): every view went on being queued for it,
 * and the service's memory grew with every change (12 MB/s with 500 locks
 * and a renew stream, red team) until the socket closed. Past its unread
 * bytes' bound it is dropped; a browser reconnects by itself.
 */
import { connect as tcpConnect } from "node:net";
import { describe, expect, it } from "vitest";
import { uniquePrefix } from "../support/nats.ts";
import { lockClient } from "../support/lock-fixtures.ts";
import { httpServicesPerTest } from "./support/http-service.ts";

const startHttpService = httpServicesPerTest();

describe("a dashboard client that does not read", () => {
  it("is dropped once what waits for it passes the bound, and the view is still served to others", async () => {
    // Views of some size, sent often: the socket's buffers fill within a second or two.
    const s = await startHttpService(uniquePrefix(), {}, { refreshMs: 20, maxUnsentBytes: 256 * 1024, maxStreams: 1 });
    const locks = lockClient(s.test.nc, s.test.config.prefix);
    for (let i = 0; i < 200; i++)
      expect((await locks.acquire({ name: `lock-${i}-${"x".repeat(200)}`, owner: "o", ttlMs: 30_000 })).status).toBeUndefined();

    const { hostname, port } = new URL(s.base);
    const socket = tcpConnect(Number(port), hostname);
    socket.on("error", () => undefined);
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(`GET /api/stream HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`);
    // Read nothing from here on. It holds the one place there is, until it is dropped.
    socket.pause();
    const streamStatus = async () => {
      const answer = await fetch(`${s.base}/api/stream`);
      await answer.body?.cancel();
      return answer.status;
    };
    await expect.poll(streamStatus, { timeout: 10_000, interval: 50 }).toBe(503);
    await expect.poll(streamStatus, { timeout: 30_000, interval: 200 }).toBe(200);
    socket.destroy();
    const view = (await (await fetch(`${s.base}/api/view`)).json()) as { locks: unknown[] };
    expect(view.locks.length).toBeGreaterThan(0);
  }, 60_000);
});
