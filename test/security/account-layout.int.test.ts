/**
 * `leasehold nats-config --layout accounts`, enforced by a real nats-server:
 * the server writes `Nats-Request-Info` on every request a client account
 * sends through its import (`acc` and, with `share: true`, `user`), replacing
 * a header the client wrote itself; durable commands reach the service under
 * `<prefix>.cmd.<account>.…`, an account the client cannot choose; a durable
 * command's `Leasehold-Reply-To` reaches the client's own account; and the
 * commands run on it as processes (`serve` as its two users, `call`,
 * `status`, `tail`, `audit`, `replay` and `host-load` as a client).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { headers as natsHeaders } from "@nats-io/nats-core";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Subjects } from "../../src/contract/subjects.ts";
import { REPLY_TO_HEADER } from "../../src/transport/command-consumer.ts";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { auditStream } from "../../src/tools/audit.ts";
import { appendUserOf, inboxPrefixOf, serviceFlagsOf, serviceUserOf, type NatsConfigOptions } from "../../src/security/nats-permissions.ts";
import { call } from "../support/nats.ts";
import { defer, leasehold, waitForLog } from "../cli/cli-process.ts";
import { startLayout, type LayoutServer } from "./layout-server.ts";

const PREFIX = "acme.lh";
const subjects = new Subjects(PREFIX);
const OPTIONS: NatsConfigOptions = { prefix: PREFIX, layout: "accounts", clients: ["alice", "bob", "carol"], operators: ["ops"] };
/** The header the server writes on a request that crossed a service import. */
const REQUEST_INFO = "Nats-Request-Info";

/** Carol's account imports the commands without `share`: the server then names her account only. */
const withoutShareForCarol = (text: string) => {
  const at = text.indexOf("\n  carol {");
  return text.slice(0, at) + text.slice(at).replace(`subject: "${PREFIX}.v1.>" }, share: true }`, `subject: "${PREFIX}.v1.>" } }`);
};

let layout: LayoutServer;

beforeAll(async () => {
  layout = await startLayout({ options: OPTIONS, edit: withoutShareForCarol }, { principals: "nats-request-info", operators: ["ops/ops"] });
}, 30_000);

afterAll(() => layout?.stop());

/** What the service's answering user receives on a command subject no endpoint serves: the request's `Nats-Request-Info`, parsed. */
async function requestInfoOf(client: NatsConnection, forged?: string): Promise<Record<string, unknown> | null> {
  const probe = `${PREFIX}.v1.probe.echo`;
  const sub = layout.answering.subscribe(probe, {
    max: 1,
    callback: (_err, msg) => {
      msg.respond(JSON.stringify(msg.headers?.get(REQUEST_INFO) ?? null));
    },
  });
  await layout.answering.flush();
  try {
    const h = natsHeaders();
    if (forged !== undefined) h.set(REQUEST_INFO, forged);
    const reply = await client.request(probe, "{}", { timeout: 5000, headers: h });
    const raw = reply.json<string | null>();
    return raw === null ? null : (JSON.parse(raw) as Record<string, unknown>);
  } finally {
    sub.unsubscribe();
  }
}

describe("nats-config --layout accounts", () => {
  it("the server writes Nats-Request-Info naming the client's account and user, and replaces one the client wrote", async () => {
    const alice = await layout.as("alice");
    const info = await requestInfoOf(alice);
    expect(info).toMatchObject({ acc: "alice", user: "alice", kind: "Client" });
    // The whole shape, as nats-server 2.10 writes it (the service parses acc and user only).
    expect(Object.keys(info!).sort()).toEqual(
      expect.arrayContaining(["acc", "user", "start", "host", "id", "lang", "ver", "rtt", "server", "kind", "client_type"].sort()),
    );
    const forged = await requestInfoOf(alice, JSON.stringify({ acc: "ops", user: "ops" }));
    expect(forged).toMatchObject({ acc: "alice", user: "alice" });
    // Without share, the account alone; a forged user is dropped all the same.
    const carol = await layout.as("carol");
    const accountOnly = await requestInfoOf(carol, JSON.stringify({ acc: "ops", user: "ops" }));
    expect(accountOnly).toMatchObject({ acc: "carol" });
    expect(accountOnly).not.toHaveProperty("user");
  });

  it("serves a client's requests and lets it read the event stream as the tools do", async () => {
    const alice = await layout.as("alice");
    const acquired = await call<{ lease: { generation: number } }>(alice, PREFIX, "lock.acquire", { name: "acct", owner: "alice" });
    expect(acquired.body.lease.generation).toBe(1);
    const ping = await alice.request("$SRV.PING.leasehold", undefined, { timeout: 2000 });
    expect(ping.json<{ name: string }>().name).toBe("leasehold");
    const log = await JetStreamEventLog.attach(alice, {
      stream: subjects.eventStream,
      subjects: subjects.allEvents,
      dedupWindowMs: 120_000,
    });
    const [acquiredEvent] = await log.readSubject(subjects.event("lock", "acct"), 1);
    // The service took the principal from the header the server wrote: account and user.
    expect(JSON.parse(new TextDecoder().decode(acquiredEvent!.payload))).toMatchObject({ by: "alice/alice" });
    const summary = await auditStream(log.readStream(), subjects, { cooldownMs: 900_000, maxTtlMs: 30_000 });
    expect(summary.violations).toBe(0);
  });

  it("takes a durable command's principal from the account the server put in its subject, which another account cannot claim, and routes its Leasehold-Reply-To back to the sender; by request/reply the same client touches what it made", async () => {
    /** Publishes a durable command as `user` to `subject`; resolves with the reply and the command subject the service took it from. */
    const sendAs = async (user: string, subject: string, body: Record<string, unknown>) => {
      const nc = await layout.as(user);
      const inbox = `${inboxPrefixOf(user)}.durable`;
      const replies = nc.subscribe(inbox, { max: 1 });
      await nc.flush();
      const h = natsHeaders();
      h.set(REPLY_TO_HEADER, inbox);
      const requestId = String(body.requestId);
      const sent = await jetstream(nc).publish(subject, JSON.stringify(body), { msgID: requestId, headers: h, timeout: 5000 });
      expect(sent.stream).toBe(subjects.commandStream);
      for await (const reply of replies)
        return { body: reply.json<Record<string, unknown>>(), from: reply.headers?.get("Leasehold-Command-Subject") };
      throw new Error("no reply");
    };
    const alice = await sendAs("alice", subjects.durableCommand("lock", "acquire"), {
      name: "acct-durable",
      owner: "alice",
      requestId: "a-1",
    });
    expect(alice.from).toBe(`${PREFIX}.cmd.alice.lock.acquire`);
    expect(alice.body).toMatchObject({ lease: { owner: "alice", generation: 1 } });
    // Recorded as alice's (the account: the server writes no user on a stored message).
    const jsm = await jetstreamManager(layout.appending);
    const event = (await jsm.streams.getMessage(subjects.eventStream, { last_by_subj: subjects.event("lock", "acct-durable") }))!;
    expect(event.json<{ by?: string }>().by).toBe("alice");
    // By request/reply alice is alice/alice, the same client: her retry gets the first answer, and the lease is hers.
    const aliceNc = await layout.as("alice");
    const body = { name: "acct-durable", owner: "alice", requestId: "a-1" };
    expect((await call(aliceNc, PREFIX, "lock.acquire", body)).body).toEqual(alice.body);
    const etag = (alice.body.lease as { etag: string }).etag;
    expect((await call(await layout.as("bob"), PREFIX, "lock.renew", { name: "acct-durable", owner: "alice", etag })).code).toBe(
      "FORBIDDEN",
    );
    expect((await call(aliceNc, PREFIX, "lock.renew", { name: "acct-durable", owner: "alice", etag })).body).toHaveProperty(
      "lease.owner",
      "alice",
    );
    // Bob names alice's account in the subject: his import puts his own account before it, and no such command exists.
    const bob = await sendAs("bob", `${PREFIX}.cmd.alice.lock.release`, { name: "acct-durable", leaseId: "x", requestId: "b-1" });
    expect(bob.from).toBe(`${PREFIX}.cmd.bob.alice.lock.release`);
    expect(bob.body).toMatchObject({ error: { code: "BAD_REQUEST" } });
  });

  it("runs serve as its two users and call, status, tail, audit, replay and host-load as a client, each a process", async () => {
    const env = (user: string) => ({ LEASEHOLD_USER: user, LEASEHOLD_PASSWORD: `pw-${user}` });
    // With the flags nats-config prints for this layout.
    const serve = leasehold(
      ["serve", "--nats", layout.url, "--prefix", PREFIX, "--log-format", "json", "--http", "off", ...serviceFlagsOf(OPTIONS)],
      {
        env: {
          ...env(serviceUserOf(PREFIX)),
          LEASEHOLD_APPEND_USER: appendUserOf(PREFIX),
          LEASEHOLD_APPEND_PASSWORD: `pw-${appendUserOf(PREFIX)}`,
        },
      },
    );
    defer(async () => {
      serve.child.kill("SIGTERM");
      await serve.exited;
    });
    await waitForLog(serve, "leasehold serving");
    const as = async (user: string, args: string[]) => {
      const proc = leasehold([...args.slice(0, 1), "--nats", layout.url, "--prefix", PREFIX, ...args.slice(1)], { env: env(user) });
      return { code: (await proc.exited).code, proc };
    };
    const acquired = await as("bob", ["call", "lock.acquire", '{"name":"procs","owner":"bob"}']);
    expect(acquired.code, acquired.proc.stderr()).toBe(0);
    const jsm = await jetstreamManager(layout.appending);
    const acquiredSeq = (await jsm.streams.getMessage(subjects.eventStream, { last_by_subj: subjects.event("lock", "procs") }))!.seq;
    const [status, tail, audit, replay, load] = await Promise.all([
      as("alice", ["status", "--json"]),
      as("alice", ["tail", "--from-seq", String(acquiredSeq), "--limit", "1", "--kind", "lock"]),
      as("alice", ["audit"]),
      as("ops", ["replay", "--kind", "lock", "--json"]),
      as("bob", ["host-load", "--host", "h1", "--load", "3", "--once"]),
    ]);
    for (const run of [status, tail, audit, replay, load]) expect(run.code, run.proc.stderr()).toBe(0);
    expect(tail.proc.stdout()).toMatch(/lock procs LockAcquired/);
  }, 120_000);
});
