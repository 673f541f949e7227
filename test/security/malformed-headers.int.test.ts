/**
 * Header blocks no client library writes, sent by hand on the layout
 * `nats-config --layout accounts` writes, with `leasehold serve` run as a
 * process with the flags it prints:
 * - a copy of `Nats-Request-Info` in another letter case, and the block left
 *   without its last line, so the server's own copy is run into the value
 *   before it: the client's copy was the only one the NATS client found, and
 *   bob passed for the operator; now such a request names no one;
 * - a header name with a space: the NATS client's parser threw inside the
 *   subscription's callback, its reader stopped, and the service answered
 *   no one after it; on a durable command it threw on every delivery, and
 *   1,024 of them held every place of the shared consumer for ever. Now the
 *   request is answered and the command refused and acknowledged.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInbox, headers as natsHeaders, type NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { Subjects } from "../../src/contract/subjects.ts";
import { appendUserOf, inboxPrefixOf, type NatsConfigOptions } from "../../src/security/nats-permissions.ts";
import { COMMAND_CONSUMER } from "../../src/transport/command-consumer.ts";
import { passwordOf, serveProcessOn, startLayoutNats, type LayoutNats } from "./layout-server.ts";
import { rawClient, type RawClient } from "./raw-client.ts";

const PREFIX = "acme.lh";
const subjects = new Subjects(PREFIX);
const OPTIONS: NatsConfigOptions = { prefix: PREFIX, layout: "accounts", clients: ["alice", "bob"], operators: ["ops"] };
const OPERATOR = JSON.stringify({ acc: "ops", user: "ops" });
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

let nats: LayoutNats;
let alice: NatsConnection;
let bob: RawClient;

beforeAll(async () => {
  nats = await startLayoutNats({ options: OPTIONS });
  alice = await nats.as("alice");
  bob = await rawClient(nats.url, "bob", passwordOf("bob"), inboxPrefixOf("bob"));
}, 60_000);

afterAll(async () => {
  bob?.close();
  await nats?.stop();
});

async function ask(nc: NatsConnection, op: string, body: unknown): Promise<Record<string, unknown>> {
  return (await nc.request(`${PREFIX}.v1.${op}`, encode(body), { timeout: 10_000 })).json<Record<string, unknown>>();
}

/** Bob's request with the header block `headers` exactly as written. */
async function askRaw(op: string, body: unknown, headers: string): Promise<Record<string, unknown>> {
  bob.publish(`${PREFIX}.v1.${op}`, headers, JSON.stringify(body));
  return JSON.parse((await bob.next(10_000)).payload) as Record<string, unknown>;
}

describe("a header block written by hand", () => {
  it.each([
    ["ended by one line break", `NATS/1.0\r\nnats-request-info: ${OPERATOR}\r\nX-Pad: a\r\n`],
    ["ended by nothing", `NATS/1.0\r\nnats-request-info: ${OPERATOR}\r\nX-Pad: a`],
  ])("with the operator's copy and no last line (%s) names no one", async (label, headers) => {
    const name = `held-${label.replace(/\W+/g, "-")}`;
    await serveProcessOn(nats.url, OPTIONS);
    const jsm = await jetstreamManager(await nats.as(appendUserOf(PREFIX)));
    const lease = (await ask(alice, "lock.acquire", { name, owner: "alice", ttlMs: 30_000 })).lease as { etag: string };
    const before = (await jsm.streams.info(subjects.eventStream)).state.last_seq;
    for (const [op, body] of [
      ["lock.release", { name, etag: lease.etag }],
      ["lock.reset", { name }],
      ["host.set", { host: "bob-host", healthy: true }],
    ] as const) {
      expect(await askRaw(op, body, headers), op).toMatchObject({ error: { code: "FORBIDDEN", principal: "" } });
    }
    expect((await jsm.streams.info(subjects.eventStream)).state.last_seq).toBe(before);
    expect(await ask(alice, "lock.get", { name })).toHaveProperty("lease.owner", "alice");
  });

  it("with a name the protocol does not allow leaves the service answering, and its durable commands refused", async () => {
    await serveProcessOn(nats.url, OPTIONS);
    const bad = "NATS/1.0\r\nBad Key: x\r\n\r\n";
    // Answered (as a request from no one), and every request after it too.
    expect(await askRaw("lock.get", { name: "any" }, bad)).toEqual({ lease: null, waiters: 0 });
    expect(await ask(alice, "lock.get", { name: "any" })).toEqual({ lease: null, waiters: 0 });

    // Durable commands so written are refused and acknowledged: none stays to be delivered again.
    for (let i = 0; i < 50; i++)
      bob.publish(
        `${PREFIX}.cmd.lock.acquire`,
        `NATS/1.0\r\nLeasehold-Reply-To: ${bob.inbox}\r\nBad Key: x\r\n\r\n`,
        JSON.stringify({ name: `d${i}`, owner: "bob", requestId: `d${i}` }),
        "",
      );
    // Read by the server before alice's command: another connection's messages are in no order with these otherwise.
    await bob.flush();
    const inbox = createInbox(inboxPrefixOf("alice"));
    const answer = alice.subscribe(inbox, { max: 1, timeout: 10_000 });
    const h = natsHeaders();
    h.set("Leasehold-Reply-To", inbox);
    alice.publish(`${PREFIX}.cmd.lock.acquire`, encode({ name: "after", owner: "alice", requestId: "a1" }), { headers: h });
    for await (const m of answer) expect(m.json()).toHaveProperty("lease.owner", "alice");
    const jsm = await jetstreamManager(await nats.as(appendUserOf(PREFIX)));
    // Each is acknowledged after its refusal is published, a moment after alice's answer: the stream and the
    // consumer are read together until both say nothing is left (one read of each at its own moment raced).
    const left = async () => {
      const consumer = await jsm.consumers.info(subjects.commandStream, COMMAND_CONSUMER);
      const stream = await jsm.streams.info(subjects.commandStream);
      return { messages: stream.state.messages, pending: consumer.num_pending, unacknowledged: consumer.num_ack_pending };
    };
    await expect.poll(left, { timeout: 10_000 }).toEqual({ messages: 0, pending: 0, unacknowledged: 0 });
  });
});
