/**
 * Proxy commands on the durable command stream: an acquisition reaches its
 * proxy through the read model, not straight into a mailbox, yet it sees
 * every command before it in the stream; replies go to `Leasehold-Reply-To`.
 */
import { describe, expect, it, vi } from "vitest";
import type { Msg } from "@nats-io/nats-core";
import { collect, createCommandStream, publishCommand } from "../support/durable.ts";
import { uniquePrefix } from "../support/nats.ts";
import { proxyEvents, useProxyIntHarness, type ProxyBody } from "../support/proxy-fixtures.ts";

const h = useProxyIntHarness();

const bodyOf = (m: Msg) => JSON.parse(m.string()) as ProxyBody;

describe("durable proxy commands", () => {
  it("see every command before them in the command stream, and answer on Leasehold-Reply-To", async () => {
    const prefix = uniquePrefix();
    const nc = await h.connect();
    await createCommandStream(nc, prefix);
    const replies = collect(nc, `replies.${prefix}.>`);
    const send = (kindOp: string, body: Record<string, unknown>) =>
      publishCommand(nc, prefix, kindOp, body, `replies.${prefix}.${String(body.requestId)}`);
    // Published before any service runs; the service then takes them all at once, and each
    // acquisition sees every command before it in the stream.
    await send("proxy.register", { requestId: "r1", proxy: "p", maxLeases: 1 });
    await send("proxy.acquire", { requestId: "r2", ttlMs: 60_000 });
    await send("proxy.acquire", { requestId: "r3", ttlMs: 60_000 });
    const svc = await h.service(prefix);
    await vi.waitFor(() => expect(replies.messages.length).toBe(3), { timeout: 10_000, interval: 20 });
    await send("proxy.register", { requestId: "r4", proxy: "q", maxLeases: 1, latencyMs: 5 });
    await send("proxy.acquire", { requestId: "r5", ttlMs: 60_000 });
    await vi.waitFor(() => expect(replies.messages.length).toBe(5), { timeout: 10_000, interval: 20 });
    const by = new Map(replies.messages.map((m) => [m.subject.slice(`replies.${prefix}.`.length), bodyOf(m)]));
    expect(by.get("r1")).toEqual({ proxy: "p" });
    expect(by.get("r2")!.lease!.proxy).toBe("p");
    expect(by.get("r2")!.stats).toEqual({ considered: 1, unhealthy: 0, inCooldown: 0, atCapacity: 0 });
    expect(by.get("r3")!.error).toMatchObject({ code: "NO_MATCH", stats: { considered: 1, unhealthy: 0, inCooldown: 0, atCapacity: 1 } });
    expect(by.get("r5")!.lease!.proxy).toBe("q");

    const grants = (await proxyEvents(svc.service.log, svc.service.subjects)).filter((e) => e.event.type === "ProxyLeaseGranted");
    expect(grants.map((e) => e.event.requestId)).toEqual(["r2", "r5"]);
    replies.stop();
  });
});
