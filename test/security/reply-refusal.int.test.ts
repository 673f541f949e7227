/**
 * The server's own refusal of a reply aimed where no reply may go, with the
 * service's own check off (`replyCheck: false`): on the shipped nats.conf and
 * both nats-config layouts, a request (or a durable command's
 * `Leasehold-Reply-To`) naming `$JS.API.STREAM.DELETE.<events>`, another
 * lock's event subject or the snapshot bucket deletes and writes nothing,
 * because the user that answers may publish only to clients' reply prefixes
 * (and in the account layout a reply crosses back only to the requester's account).
 * The one-machine default is tried as a process too: `leasehold serve
 * --unsafe-no-reply-check` on its own nats-server, attacked by an anonymous client.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { headers as natsHeaders } from "@nats-io/nats-core";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { Subjects } from "../../src/contract/subjects.ts";
import { REPLY_TO_HEADER } from "../../src/transport/command-consumer.ts";
import { call } from "../support/nats.ts";
import { defer, freePort, leasehold, tempDir, waitForLog } from "../cli/cli-process.ts";
import { expectPublishRefused, startLayout, type LayoutServer, type LayoutSource } from "./layout-server.ts";

interface Case {
  readonly name: string;
  readonly source: LayoutSource;
  /** Who attacks and who holds the victim lock (undefined: a connection without credentials). */
  readonly attacker: string | undefined;
  readonly victim: string | undefined;
  /** Whether a request's reply reaches the answering user with the attacker's own reply subject (no import in between). */
  readonly repliesAsSent: boolean;
}

const CASES: Case[] = [
  { name: "the shipped nats.conf", source: { shipped: true }, attacker: undefined, victim: undefined, repliesAsSent: true },
  {
    name: "nats-config's users layout",
    source: { options: { prefix: "acme.lh", clients: ["alice", "bob"], anonymousClient: false } },
    attacker: "alice",
    victim: "bob",
    repliesAsSent: true,
  },
  {
    name: "nats-config's account layout",
    source: { options: { prefix: "acme.lh", layout: "accounts", clients: ["alice", "bob"], operators: ["ops"] } },
    attacker: "alice",
    victim: "bob",
    repliesAsSent: false,
  },
];

describe.each(CASES)("with the service's reply check off, on $name", ({ source, attacker, victim, repliesAsSent }) => {
  let layout: LayoutServer;
  let subjects: Subjects;
  let jsm: JetStreamManager;
  let mallory: NatsConnection;
  let refused: () => string;
  let victimSeq: number;

  beforeAll(async () => {
    layout = await startLayout(source, { replyCheck: false });
    subjects = new Subjects(layout.prefix);
    jsm = await jetstreamManager(layout.appending);
    mallory = await layout.as(attacker);
    refused = layout.violations(layout.answering);
    const acquired = await call<{ lease: { generation: number } }>(await layout.as(victim), layout.prefix, "lock.acquire", {
      name: "victim",
      owner: "bob",
    });
    expect(acquired.body.lease.generation).toBe(1);
    victimSeq = (await jsm.streams.getMessage(subjects.eventStream, { last_by_subj: subjects.event("lock", "victim") }))!.seq;
  }, 30_000);

  afterAll(() => layout?.stop());

  /** A manifest subject of the snapshot bucket that the service never writes itself. */
  const forgedManifest = () => `$O.${subjects.projectionBucket}.M.${Buffer.from("forged").toString("base64url")}`;

  /** The subjects a reply must never reach, each with what must still hold afterwards. */
  const targets = () => [
    {
      what: "JetStream's API: delete the event stream",
      subject: `$JS.API.STREAM.DELETE.${subjects.eventStream}`,
      unchanged: async () => expect((await jsm.streams.info(subjects.eventStream)).config.name).toBe(subjects.eventStream),
    },
    {
      what: "another lock's event subject",
      subject: subjects.event("lock", "victim"),
      unchanged: async () =>
        expect((await jsm.streams.getMessage(subjects.eventStream, { last_by_subj: subjects.event("lock", "victim") }))?.seq).toBe(
          victimSeq,
        ),
    },
    {
      what: "a snapshot manifest in the bucket",
      subject: forgedManifest(),
      unchanged: async () =>
        expect(await jsm.streams.getMessage(`OBJ_${subjects.projectionBucket}`, { last_by_subj: forgedManifest() })).toBeNull(),
    },
  ];

  /** Requests the endpoints have answered so far (`$SRV.STATS`, as the attacker may ask). */
  const answered = async () => {
    const stats = (await mallory.request("$SRV.STATS.leasehold", undefined, { timeout: 2000 })).json<{
      endpoints: { num_requests: number }[];
    }>();
    return stats.endpoints.reduce((sum, e) => sum + e.num_requests, 0);
  };

  it("a request's reply subject: nothing is deleted or written", async () => {
    for (const target of targets()) {
      const before = await answered();
      mallory.publish(subjects.command("proxy", "release"), "{}", { reply: target.subject });
      mallory.publish(subjects.command("lock", "get"), JSON.stringify({ name: "victim" }), { reply: target.subject });
      await vi.waitFor(async () => expect(await answered()).toBe(before + 2), { timeout: 5000, interval: 20 });
      // The replies have left the service: whatever the server does with them is done once it answers this ping.
      await layout.answering.flush();
      if (repliesAsSent) await expectPublishRefused(refused, target.subject);
      await target.unchanged();
    }
  });

  it("a durable command's Leasehold-Reply-To: nothing is deleted or written, the server refuses the publication", async () => {
    let n = 0;
    for (const target of targets()) {
      const h = natsHeaders();
      h.set(REPLY_TO_HEADER, target.subject);
      const requestId = `attack-${++n}`;
      await jetstream(mallory).publish(
        subjects.durableCommand("lock", "release"),
        JSON.stringify({ name: "victim", leaseId: "not-the-holder", requestId }),
        { msgID: requestId, headers: h, timeout: 2000 },
      );
      await expectPublishRefused(refused, target.subject);
      await target.unchanged();
    }
  });
});

describe("with the service's reply check off, on the one-machine default as a process", () => {
  it("a request's reply subject aimed at the event stream's deletion, another lock's events or the bucket: nothing is deleted or written", async () => {
    const cwd = tempDir("refusal");
    const port = await freePort();
    const proc = leasehold(["serve", "--nats-port", String(port), "--http", "off", "--unsafe-no-reply-check", "--log-format", "json"], {
      cwd,
    });
    defer(async () => {
      proc.child.kill("SIGTERM");
      await proc.exited;
    });
    await waitForLog(proc, "leasehold serving");
    const url = `nats://127.0.0.1:${port}`;
    const client = await connect({ servers: url, maxReconnectAttempts: 0 });
    defer(() => client.close());
    // The appending user reads what a client may not (the snapshot bucket).
    const password = readFileSync(join(cwd, ".leasehold", "append-password"), "utf8").trim();
    const reader = await connect({ servers: url, user: "leasehold-append", pass: password, inboxPrefix: "_INBOX_leasehold-append" });
    defer(() => reader.close());
    const jsm = await jetstreamManager(reader);
    const subjects = new Subjects("leasehold");
    expect(
      (await call<{ lease: { generation: number } }>(client, "leasehold", "lock.acquire", { name: "victim", owner: "bob" })).body.lease
        .generation,
    ).toBe(1);
    const victimSeq = (await jsm.streams.getMessage(subjects.eventStream, { last_by_subj: subjects.event("lock", "victim") }))!.seq;
    const manifest = `$O.${subjects.projectionBucket}.M.${Buffer.from("forged").toString("base64url")}`;
    const answered = async () =>
      (await client.request("$SRV.STATS.leasehold", undefined, { timeout: 2000 }))
        .json<{ endpoints: { num_requests: number }[] }>()
        .endpoints.reduce((sum, e) => sum + e.num_requests, 0);
    const before = await answered();
    for (const reply of [`$JS.API.STREAM.DELETE.${subjects.eventStream}`, subjects.event("lock", "victim"), manifest]) {
      client.publish(subjects.command("proxy", "release"), "{}", { reply });
      client.publish(subjects.command("lock", "get"), JSON.stringify({ name: "victim" }), { reply });
    }
    await vi.waitFor(async () => expect(await answered()).toBe(before + 6), { timeout: 5000, interval: 20 });
    // Their replies have left on the service's answering connection: once a later reply on it is back, the server has handled them.
    expect((await call<{ lease: { owner: string } }>(client, "leasehold", "lock.get", { name: "victim" })).body.lease.owner).toBe("bob");
    expect(proc.logs().some((l) => l.msg === "request refused: its reply subject is in a reserved namespace")).toBe(false);
    expect((await jsm.streams.info(subjects.eventStream)).config.name).toBe(subjects.eventStream);
    expect((await jsm.streams.getMessage(subjects.eventStream, { last_by_subj: subjects.event("lock", "victim") }))?.seq).toBe(victimSeq);
    expect(await jsm.streams.getMessage(`OBJ_${subjects.projectionBucket}`, { last_by_subj: manifest })).toBeNull();
  }, 60_000);
});
