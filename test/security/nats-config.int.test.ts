/**
 * `leasehold nats-config` for a non-default prefix, enforced by a real
 * nats-server started from the generated configuration on a free loopback
 * port: the service works as before under its user; a client can command,
 * discover and read the stream, but each forbidden act is refused (publish
 * events, create or delete streams, take durable commands, answer or
 * subscribe to command subjects, read another client's replies); the auditor
 * reads the stream and can publish nothing.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { resolveConfig } from "../../src/config.ts";
import { startService, type RunningService } from "../../src/service/start-service.ts";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { auditStream } from "../../src/tools/audit.ts";
import { appendUserOf, auditorUserOf, inboxPrefixOf, passwordEnvOf, serviceUserOf } from "../../src/security/nats-permissions.ts";
import { natsConfig } from "../../src/security/nats-config-text.ts";
import { call, quietLogger } from "../support/nats.ts";
import { startConfiguredServer, type ConfiguredServer } from "./configured-server.ts";
import { expectServiceOnlyWritesRefused } from "./service-only-writes.ts";
import { violations } from "./layout-server.ts";

const PREFIX = "acme.lh";
const subjects = new Subjects(PREFIX);
const SERVICE = serviceUserOf(PREFIX);
const APPENDER = appendUserOf(PREFIX);
const AUDITOR = auditorUserOf(PREFIX);
const passwords: Record<string, string> = {
  [SERVICE]: "pw-service",
  [APPENDER]: "pw-append",
  alice: "pw-alice",
  bob: "pw-bob",
  [AUDITOR]: "pw-auditor",
};

let server: ConfiguredServer | undefined;
let url: string;
let service: RunningService;
let serviceConn: NatsConnection;
let appendConn: NatsConnection;
const open: NatsConnection[] = [];

beforeAll(async () => {
  const env: Record<string, string> = {};
  for (const [user, pw] of Object.entries(passwords)) env[passwordEnvOf(user)] = pw;
  server = await startConfiguredServer((dir) => {
    const conf = natsConfig({
      prefix: PREFIX,
      clients: ["alice", "bob"],
      anonymousClient: false,
      listen: "127.0.0.1:-1",
      storeDir: join(dir, "js"),
    });
    expect(conf).not.toMatch(/deny/);
    return conf;
  }, env);
  url = server.url;
  serviceConn = await as(SERVICE);
  appendConn = await as(APPENDER);
  service = await startService({
    nc: serviceConn,
    appendNc: appendConn,
    config: resolveConfig({ nats: url, prefix: PREFIX }),
    logger: quietLogger,
  });
});

afterAll(async () => {
  await service?.stop();
  for (const nc of open) await nc.close().catch(() => undefined);
  await server?.stop();
});

/** A connection as `user`, with the inbox prefix its permissions expect. */
async function as(user: string): Promise<NatsConnection> {
  const nc = await connect({
    servers: url,
    user,
    pass: passwords[user]!,
    inboxPrefix: inboxPrefixOf(user),
    name: user,
    maxReconnectAttempts: 0,
  });
  open.push(nc);
  return nc;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\$]/g, "\\$&");
const expectViolation = async (seen: () => string, kind: "Publish" | "Subscription", subject: string) =>
  vi.waitFor(() => expect(seen()).toMatch(new RegExp(`${kind} to "${escape(subject)}"`)), { timeout: 5000, interval: 20 });

describe(`nats-config --prefix ${PREFIX}`, () => {
  it("lets the service serve, a client command (request and durable) and read the stream, the auditor read it", async () => {
    const alice = await as("alice");
    const acquired = await call<{ lease: { generation: number; etag: string } }>(alice, PREFIX, "lock.acquire", {
      name: "perm",
      owner: "alice",
    });
    expect(acquired.body.lease.generation).toBe(1);
    const ping = await alice.request("$SRV.PING.leasehold", undefined, { timeout: 2000 });
    expect(ping.json<{ name: string }>().name).toBe("leasehold");
    const ack = await jetstream(alice).publish(
      subjects.durableCommand("lock", "reset"),
      JSON.stringify({ name: "perm", requestId: "r1" }),
      { msgID: "r1", timeout: 2000 },
    );
    expect(ack.stream).toBe(subjects.commandStream);

    for (const reader of [alice, await as(AUDITOR)]) {
      const log = await JetStreamEventLog.attach(reader, {
        stream: subjects.eventStream,
        subjects: subjects.allEvents,
        dedupWindowMs: 120_000,
      });
      await vi.waitFor(async () => expect((await log.readSubject(subjects.event("lock", "perm"), 1)).length).toBe(2), { timeout: 5000 });
      const summary = await auditStream(log.readStream(), subjects, { cooldownMs: 900_000, maxTtlMs: 30_000 });
      expect(summary.violations).toBe(0);
      expect(summary.read).toBe(2);
    }
  });

  it("refuses a client every act the issue lists, each one asserted", async () => {
    const alice = await as("alice");
    const seen = violations(alice);
    const js = jetstream(alice);
    const jsm = await jetstreamManager(alice);
    const before = (await jsm.streams.info(subjects.eventStream)).state.messages;

    // Publish an event (forge history).
    await expect(js.publish(subjects.event("lock", "perm"), "{}", { timeout: 2000 })).rejects.toThrow(/Permissions Violation/);
    // Create or delete streams.
    await expect(jsm.streams.add({ name: "FORGED", subjects: ["forged.>"] })).rejects.toThrow(/Permissions Violation/);
    await expect(jsm.streams.delete(subjects.eventStream)).rejects.toThrow(/Permissions Violation/);
    await expect(jsm.streams.delete(subjects.commandStream)).rejects.toThrow(/Permissions Violation/);
    // Take durable commands: the pull request is refused, nothing is delivered.
    const consumer = await js.consumers.get(subjects.commandStream, "leasehold-commands").catch((e: Error) => e);
    if (consumer instanceof Error) {
      expect(consumer.message).toMatch(/Permissions Violation/);
    } else {
      expect(await consumer.next({ expires: 1000 }).catch(() => null)).toBeNull();
      await expectViolation(seen, "Publish", `$JS.API.CONSUMER.MSG.NEXT.${subjects.commandStream}.leasehold-commands`);
    }
    // Answer commands: subscribe to the command subjects, with or without the service's queue group.
    alice.subscribe(`${PREFIX}.v1.>`, { queue: "leasehold" });
    await expectViolation(seen, "Subscription", `${PREFIX}.v1.>`);
    alice.subscribe(subjects.command("lock", "acquire"));
    await expectViolation(seen, "Subscription", subjects.command("lock", "acquire"));
    // Read another client's replies, or everyone's.
    alice.subscribe(`${inboxPrefixOf("bob")}.>`);
    await expectViolation(seen, "Subscription", `${inboxPrefixOf("bob")}.>`);
    alice.subscribe("_INBOX.>");
    await expectViolation(seen, "Subscription", "_INBOX.>");
    alice.subscribe(">");
    await expectViolation(seen, "Subscription", ">");

    // Bob's requests are still answered to Bob alone.
    const bob = await as("bob");
    expect((await call<{ lease: null }>(bob, PREFIX, "lock.get", { name: "perm" })).body.lease).toBeNull();
    expect((await jsm.streams.info(subjects.eventStream)).state.messages).toBe(before);
  });

  it("refuses a client and the auditor every write only the service may make: events, command errors, snapshots, streams, command consumers, other inboxes", async () => {
    expect(await expectServiceOnlyWritesRefused(await as("alice"), appendConn, subjects, inboxPrefixOf("bob"))).toBeGreaterThan(20);
    await expectServiceOnlyWritesRefused(await as(AUDITOR), appendConn, subjects, inboxPrefixOf("alice"));
  });

  it("lets the auditor publish nothing: no command, durable command, event or discovery request", async () => {
    const auditor = await as(AUDITOR);
    const seen = violations(auditor);
    for (const subject of [
      subjects.command("lock", "reset"),
      subjects.durableCommand("lock", "reset"),
      subjects.event("lock", "perm"),
      "$SRV.PING",
    ]) {
      auditor.publish(subject, JSON.stringify({ name: "perm", requestId: "a1" }));
      await expectViolation(seen, "Publish", subject);
    }
    const jsm = await jetstreamManager(auditor);
    await expect(jsm.streams.delete(subjects.eventStream)).rejects.toThrow(/Permissions Violation/);
    const log = await JetStreamEventLog.attach(auditor, {
      stream: subjects.eventStream,
      subjects: subjects.allEvents,
      dedupWindowMs: 120_000,
    });
    expect(await log.lastSeq()).toBeGreaterThan(0);
  });
});
