/**
 * A durable command's `Leasehold-Reply-To` is text the client wrote in a
 * header, not a subject the server parsed: it may hold a space, a wildcard,
 * an empty token or thousands of bytes. Tried on `leasehold serve` run as a
 * process on its own nats-server (the one-machine default, an anonymous
 * client): each such command is refused as invalid, its error published to
 * `<prefix>.cmd-errors.<kind>.<op>` only, nothing is appended, and the
 * service keeps serving on the same connection. (A space made the client
 * library throw inside the consumer and the process exit, again at every
 * redelivery; 5,000 bytes made the server close the service's connection
 * for a control line past its limit, again every ack wait.) A command
 * subject of 4,000 bytes did the same through its error's subject on
 * `cmd-errors`: such an error goes to `<prefix>.cmd-errors.invalid`.
 */
import { describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { headers as natsHeaders } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { defer, startLocalServe } from "../cli/cli-process.ts";

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** Reply subjects no publication may go to, each as a client could write it in the header. */
const HOSTILE = [
  ["a space", "_INBOX.a b"],
  ["a tab", "_INBOX.a\tb"],
  ["5,000 bytes", `_INBOX.${"a".repeat(5000)}`],
  ["a full wildcard", "_INBOX.>"],
  ["a token wildcard", "_INBOX.*.x"],
  ["an empty token", "_INBOX..x"],
  ["a leading dot", "._INBOX.x"],
  ["a trailing dot", "_INBOX.x."],
] as const;

describe("a durable command whose Leasehold-Reply-To is no subject a reply may go to", () => {
  it("is refused as invalid, appends nothing, and leaves the service serving on its connection", async () => {
    const serve = await startLocalServe("hostile-reply-to");
    const nc = await connect({ servers: serve.url, maxReconnectAttempts: 0 });
    defer(() => nc.close());
    const jsm = await jetstreamManager(nc);
    const lastSeq = async () => (await jsm.streams.info("LEASEHOLD_EVENTS")).state.last_seq;
    const before = await lastSeq();

    const errors = nc.subscribe("leasehold.cmd-errors.lock.acquire", { max: HOSTILE.length, timeout: 15_000 });
    HOSTILE.forEach(([, replyTo], i) => {
      const h = natsHeaders();
      h.set("Leasehold-Reply-To", replyTo);
      h.set("Nats-Msg-Id", `hostile-${i}`);
      nc.publish("leasehold.cmd.lock.acquire", encode({ name: `victim-${i}`, owner: "mallory", requestId: `hostile-${i}` }), {
        headers: h,
      });
    });
    const refusals: string[] = [];
    for await (const m of errors) {
      const { error } = m.json<{ error: { code: string; message: string } }>();
      expect(error.code).toBe("BAD_REQUEST");
      refusals.push(error.message);
    }
    expect(refusals).toHaveLength(HOSTILE.length);
    for (const message of refusals) expect(message).toMatch(/^Leasehold-Reply-To: .* is not a subject a reply may go to/);

    // Nothing was carried out, the process is up, and it never lost its connection.
    expect(await lastSeq()).toBe(before);
    expect(serve.proc.child.exitCode).toBeNull();
    const acquired = await nc.request("leasehold.v1.lock.acquire", encode({ name: "after", owner: "alice" }), { timeout: 5000 });
    const { lease } = acquired.json<{ lease: { etag: string } }>();
    const released = await nc.request("leasehold.v1.lock.release", encode({ name: "after", etag: lease.etag }), { timeout: 5000 });
    expect(released.json()).toEqual({});
    expect(serve.proc.logs().filter((l) => String(l.msg).startsWith("NATS connection lost"))).toEqual([]);
    expect(serve.proc.stderr()).toBe("");
  });
});

describe("a durable command on a subject of thousands of bytes", () => {
  it("has its error published to cmd-errors.invalid, and leaves the service serving on its connection", async () => {
    const serve = await startLocalServe("hostile-command-subject");
    const nc = await connect({ servers: serve.url, maxReconnectAttempts: 0 });
    defer(() => nc.close());
    const errors = nc.subscribe("leasehold.cmd-errors.invalid", { max: 1, timeout: 15_000 });
    // As long as the client's own control line allows: the error's subject would be 7 bytes longer.
    nc.publish(`leasehold.cmd.${"x".repeat(4070)}`, encode({ requestId: "long-subject" }));
    for await (const m of errors) {
      expect(m.json<{ error: { code: string } }>().error.code).toBe("BAD_REQUEST");
      expect(m.headers?.get("Leasehold-Command-Subject")).toHaveLength("leasehold.cmd.".length + 4070);
    }
    const got = await nc.request("leasehold.v1.lock.get", encode({ name: "after" }), { timeout: 5000 });
    expect(got.json()).toEqual({ lease: null, waiters: 0 });
    expect(serve.proc.logs().filter((l) => String(l.msg).startsWith("NATS connection lost"))).toEqual([]);
  });
});
