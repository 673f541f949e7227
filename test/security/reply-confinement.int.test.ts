/**
 * Replies go only where a reply may go, tried as an attacker on the
 * one-machine default (`leasehold serve` on its own nats-server and the
 * shipped nats.conf, an anonymous client): a request whose reply subject is
 * JetStream's API, the event stream or the snapshot bucket is neither carried
 * out nor answered, and nothing is written or deleted; a durable command
 * whose `Leasehold-Reply-To` is one of those is refused as invalid, its error
 * published to `<prefix>.cmd-errors.<kind>.<op>` only. Every refusal is
 * counted in `leasehold_refused_replies_total` and logged at warn.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { connect } from "@nats-io/transport-node";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { defer, freePort, leasehold, tempDir, waitForLog } from "../cli/cli-process.ts";

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

async function connected(options: Parameters<typeof connect>[0]): Promise<NatsConnection> {
  const nc = await connect({ maxReconnectAttempts: 0, ...options });
  defer(() => nc.close());
  return nc;
}

/** The value of `leasehold_refused_replies_total{path}` on the instance's /metrics. */
async function refused(http: string, path: "request" | "durable"): Promise<number> {
  const text = await (await fetch(`http://${http}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`leasehold_refused_replies_total{path="${path}"}`));
  return line === undefined ? 0 : Number(line.split(" ")[1]);
}

describe("a reply subject in a reserved namespace", () => {
  it("is neither carried out nor answered, and writes or deletes nothing, on the one-machine default", async () => {
    const cwd = tempDir("replies");
    const port = await freePort();
    const http = `127.0.0.1:${await freePort()}`;
    const proc = leasehold(["serve", "--nats-port", String(port), "--http", http], { cwd });
    await waitForLog(proc, "leasehold serving");
    const url = `nats://127.0.0.1:${port}`;
    const client = await connected({ servers: url });
    // The service's appending user, to look at what a client may not read (the snapshot bucket).
    const password = readFileSync(join(cwd, ".leasehold", "append-password"), "utf8").trim();
    const admin = await connected({ servers: url, user: "leasehold-append", pass: password, inboxPrefix: "_INBOX_leasehold-append" });
    const jsm = await jetstreamManager(admin);
    const bucketStream = "OBJ_LEASEHOLD_PROJECTIONS";
    const before = {
      events: (await jsm.streams.info("LEASEHOLD_EVENTS")).state.last_seq,
      bucket: (await jsm.streams.info(bucketStream).catch(() => undefined))?.state.messages ?? 0,
    };

    const aims = [
      ["proxy.release", { leaseId: "x" }, "$JS.API.STREAM.DELETE.LEASEHOLD_EVENTS"],
      ["lock.acquire", { name: "victim", owner: "mallory" }, "leasehold.events.lock.victim"],
      ["lock.acquire", { name: "victim", owner: "mallory" }, `$O.LEASEHOLD_PROJECTIONS.M.bG9jaw`],
      ["lock.get", { name: "victim" }, "$JS.API.STREAM.PURGE.OBJ_LEASEHOLD_PROJECTIONS"],
      ["lock.acquire", { name: "victim", owner: "mallory" }, "$KV.anything.victim"],
      ["lock.acquire", { name: "victim", owner: "mallory" }, "$SYS.REQ.SERVER.PING"],
    ] as const;
    for (const [op, body, reply] of aims) client.publish(`leasehold.v1.${op}`, encode(body), { reply });
    await vi.waitFor(async () => expect(await refused(http, "request")).toBe(aims.length), { timeout: 10_000, interval: 50 });
    const warned = await waitForLog(proc, "request refused: its reply subject is in a reserved namespace");
    expect(warned).toMatchObject({ level: 40, path: "request", reply: aims[0][2], subject: "leasehold.v1.proxy.release" });
    // Discovery answers go nowhere reserved either (they arrive on a connection of their own: sent after, counted after).
    client.publish("$SRV.PING.leasehold", "", { reply: "leasehold.events.lock.victim" });
    await vi.waitFor(async () => expect(await refused(http, "request")).toBe(aims.length + 1), { timeout: 10_000, interval: 50 });

    // A durable command aiming its answer at the event stream is refused as invalid, its error on cmd-errors only.
    const errors = client.subscribe("leasehold.cmd-errors.lock.acquire", { max: 1, timeout: 10_000 });
    const h = natsHeaders();
    h.set("Leasehold-Reply-To", "leasehold.events.lock.victim");
    client.publish("leasehold.cmd.lock.acquire", encode({ name: "victim", owner: "mallory", requestId: "durable-1" }), { headers: h });
    for await (const m of errors) {
      expect(m.json<{ error: { code: string; message: string } }>().error).toMatchObject({ code: "BAD_REQUEST" });
      expect(m.json<{ error: { message: string } }>().error.message).toMatch(/^Leasehold-Reply-To: leasehold\.events\.lock\.victim is in/);
    }
    expect(await refused(http, "durable")).toBe(1);

    // Nothing was carried out, written or deleted: the stream is there with no new event, the lock is free, the bucket unchanged.
    const after = await jsm.streams.info("LEASEHOLD_EVENTS");
    expect(after.state.last_seq).toBe(before.events);
    expect((await jsm.streams.info(bucketStream).catch(() => undefined))?.state.messages ?? 0).toBe(before.bucket);
    const got = await client.request("leasehold.v1.lock.get", encode({ name: "victim" }), { timeout: 5000 });
    expect(got.json<{ lease: unknown }>().lease).toBeNull();
  });
});
