/**
 * One address cannot hold every dashboard place, and a client that never
 * finishes its headers is cut off when their deadline passes (Node checked it
 * only every 30 s: a trickle of headers held a socket that long, red team).
 */
import { request, type IncomingMessage } from "node:http";
import { connect as tcpConnect } from "node:net";
import { describe, expect, it } from "vitest";
import { uniquePrefix } from "../support/nats.ts";
import { httpServicesPerTest } from "./support/http-service.ts";

const startHttpService = httpServicesPerTest();

/** Opens the dashboard's stream from `localAddress`: its status, and a way to close it. */
function openStream(base: string, localAddress: string): Promise<{ status: number; body: Promise<string>; close(): void }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: hostname, port, path: "/api/stream", localAddress }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      const body = new Promise<string>((done) => {
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => done(Buffer.concat(chunks).toString()));
        res.on("close", () => done(Buffer.concat(chunks).toString()));
      });
      resolve({ status: res.statusCode!, body, close: () => req.destroy() });
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the dashboard's places", () => {
  it("are at most --http-streams-per-peer for one address, whatever the others hold", async () => {
    const s = await startHttpService(uniquePrefix(), {}, { maxStreamsPerPeer: 2 });
    const first = await openStream(s.base, "127.0.0.1");
    const second = await openStream(s.base, "127.0.0.1");
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await openStream(s.base, "127.0.0.1");
    expect(third.status).toBe(503);
    expect(await third.body).toBe("too many dashboard clients from this address\n");
    // Another address has its own places.
    const other = await openStream(s.base, "127.0.0.2");
    expect(other.status).toBe(200);
    // A place given back is the address's again.
    first.close();
    await expect
      .poll(
        async () => {
          const again = await openStream(s.base, "127.0.0.1");
          again.close();
          return again.status;
        },
        { timeout: 5000, interval: 20 },
      )
      .toBe(200);
    for (const open of [second, other]) open.close();
  });

  it("are not held by a client that never finishes its headers: it is cut off at their deadline", async () => {
    const s = await startHttpService(uniquePrefix(), {}, { headersTimeoutMs: 400 });
    const { hostname, port } = new URL(s.base);
    const socket = tcpConnect(Number(port), hostname);
    socket.on("error", () => undefined);
    let answer = "";
    socket.on("data", (c: Buffer) => (answer += c.toString()));
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(`GET /api/stream HTTP/1.1\r\nHost: ${hostname}\r\nX-Slow: `);
    // Within the test's timeout (5 s): the check runs every 100 ms here, and was every 30 s.
    await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  }, 5000);
});
