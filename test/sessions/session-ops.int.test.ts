/**
 * Sessions of docs/protocol.md ("Sessions") over NATS request/reply and the
 * durable command stream, against a real nats-server: open, keepalive, close
 * and get, the end being final (NO_SESSION), a retried open, and the events.
 */
import { describe, expect, it, vi } from "vitest";
import type { Msg } from "@nats-io/nats-core";
import { call, uniquePrefix } from "../support/nats.ts";
import { expectFailure, expectOk } from "../support/replies.ts";
import { useLockHarness } from "../support/lock-fixtures.ts";
import { collect, createCommandStream, eventsOfKind, publishCommand } from "../support/durable.ts";
import type { Session } from "../../src/contract/messages.ts";

const h = useLockHarness();

interface SessionBody {
  readonly session?: Session | null;
  readonly locks?: readonly string[];
  readonly error?: { readonly code: string; readonly message: string } & Record<string, unknown>;
}

async function setup(overrides: Parameters<typeof h.service>[1] = {}) {
  const prefix = uniquePrefix();
  const svc = await h.service(prefix, overrides);
  const op = (name: string) => (body: unknown) => call<SessionBody>(svc.nc, prefix, `session.${name}`, body);
  return { prefix, svc, open: op("open"), keepalive: op("keepalive"), close: op("close"), get: op("get") };
}

describe("sessions", () => {
  it("open, keepalive and get a live session; close ends it for good", async () => {
    const s = await setup();
    const before = Date.now();
    const opened = expectOk(await s.open({ owner: "worker-a", ttlMs: 5000 })).session!;
    expect(opened).toMatchObject({ owner: "worker-a", ttlMs: 5000 });
    expect(opened.id).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(Date.parse(opened.expiresAt)).toBeGreaterThanOrEqual(before + 5000);
    expect(expectOk(await s.get({ id: opened.id }))).toEqual({ session: opened, locks: [] });

    const kept = expectOk(await s.keepalive({ id: opened.id })).session!;
    expect(Date.parse(kept.expiresAt)).toBeGreaterThanOrEqual(Date.parse(opened.expiresAt));
    expect({ ...kept, expiresAt: "" }).toEqual({ ...opened, expiresAt: "" });

    expect(expectOk(await s.close({ id: opened.id }))).toEqual({});
    expect(expectOk(await s.get({ id: opened.id }))).toEqual({ session: null });
    expectFailure(await s.keepalive({ id: opened.id }), 404, "NO_SESSION");
    expectFailure(await s.close({ id: opened.id }), 404, "NO_SESSION");

    const events = (await eventsOfKind(s.svc.nc, s.prefix, "session")).map((e) => [e.type, e.id, Object.keys(e.data as object)]);
    expect(events).toEqual([
      ["SessionOpened", opened.id, ["owner", "ttlMs", "expiresAt"]],
      ["SessionKeptAlive", opened.id, ["expiresAt"]],
      ["SessionClosed", opened.id, []],
    ]);
  });

  it("defaults ttlMs to lockTtlMs, refuses one above maxTtlMs, and answers NO_SESSION for unknown ids", async () => {
    const s = await setup({ lockTtlMs: 700, maxTtlMs: 2000 });
    expect(expectOk(await s.open({ owner: "o" })).session!.ttlMs).toBe(700);
    expectFailure(await s.open({ owner: "o", ttlMs: 2001 }), 400, "TTL_EXCEEDS_MAX", { ttlMs: 2001, maxTtlMs: 2000 });
    expectFailure(await s.open({ owner: "o", ttlMS: 10 }), 400, "BAD_REQUEST", { field: "ttlMS" });
    expectFailure(await s.keepalive({ id: "never" }), 404, "NO_SESSION");
    expectFailure(await s.close({ id: "never" }), 404, "NO_SESSION");
    expect(expectOk(await s.get({ id: "never" }))).toEqual({ session: null });
  });

  it("ends when expiresAt passes: keepalive is NO_SESSION then", async () => {
    const s = await setup({ lockTtlMs: 200, maxTtlMs: 200 });
    const opened = expectOk(await s.open({ owner: "o" })).session!;
    await vi.waitFor(async () => expect(expectOk(await s.get({ id: opened.id }))).toEqual({ session: null }), {
      timeout: 5000,
      interval: 50,
    });
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(opened.expiresAt));
    expectFailure(await s.keepalive({ id: opened.id }), 404, "NO_SESSION");
  });

  it("gives a retried open (same requestId) the same session, and another requestId another one", async () => {
    const s = await setup();
    const first = expectOk(await s.open({ owner: "o", requestId: "open-1" })).session!;
    expect(expectOk(await s.open({ owner: "o", requestId: "open-1" })).session).toEqual(first);
    const other = expectOk(await s.open({ owner: "o", requestId: "open-2" })).session!;
    expect(other.id).not.toBe(first.id);
    expect((await eventsOfKind(s.svc.nc, s.prefix, "session")).length).toBe(2);
  });

  it("takes open, keepalive and close as durable commands, answering on Leasehold-Reply-To", async () => {
    const prefix = uniquePrefix();
    const nc = await h.connect();
    await createCommandStream(nc, prefix);
    const replies = collect(nc, `${prefix}.replies.>`);
    const send = (kindOp: string, body: Record<string, unknown>) =>
      publishCommand(nc, prefix, kindOp, body, `${prefix}.replies.${String(body.requestId)}`);
    await send("session.open", { requestId: "d1", owner: "o", ttlMs: 10_000 });
    await h.service(prefix);
    await vi.waitFor(() => expect(replies.messages.length).toBe(1), { timeout: 10_000, interval: 20 });
    const body = (m: Msg) => JSON.parse(m.string()) as SessionBody;
    const id = body(replies.messages[0]!).session!.id;
    await send("session.keepalive", { requestId: "d2", id });
    await send("session.close", { requestId: "d3", id });
    await send("session.close", { requestId: "d4", id });
    await vi.waitFor(() => expect(replies.messages.length).toBe(4), { timeout: 10_000, interval: 20 });
    const by = new Map(replies.messages.map((m) => [m.subject.slice(`${prefix}.replies.`.length), body(m)]));
    expect(by.get("d2")!.session!.id).toBe(id);
    expect(by.get("d3")).toEqual({});
    expect(by.get("d4")!.error!.code).toBe("NO_SESSION");
    expect((await eventsOfKind(nc, prefix, "session")).map((e) => e.type)).toEqual(["SessionOpened", "SessionKeptAlive", "SessionClosed"]);
    replies.stop();
  });
});
