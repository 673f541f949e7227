/**
 * The project's nats.conf, as `leasehold serve` runs it, enforces the least
 * privilege of docs/operations.md: the service user (password from the environment) runs the
 * service; a client without credentials can send requests and durable
 * commands and read the event stream, but cannot append events, delete or
 * purge streams, take durable commands, or answer the service's subjects.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { pino } from "pino";
import { PROJECT_ROOT } from "../../src/cluster/nats-server-binary.ts";
import { resolveConfig } from "../../src/config.ts";
import { startService, type RunningService } from "../../src/service/start-service.ts";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { call } from "../support/nats.ts";
import { startConfiguredServer, type ConfiguredServer } from "./configured-server.ts";
import { expectServiceOnlyWritesRefused } from "./service-only-writes.ts";

const PASSWORD = "test-service-password";
const APPEND_PASSWORD = "test-append-password";
let server: ConfiguredServer | undefined;
let url: string;
let service: RunningService;
let serviceConn: NatsConnection;
let appendConn: NatsConnection;

beforeAll(async () => {
  // The real nats.conf, with only its port and store moved: a free port and a temporary store.
  server = await startConfiguredServer(
    (dir) => {
      const conf = readFileSync(join(PROJECT_ROOT, "nats.conf"), "utf8")
        .replace(/^listen: .*$/m, "listen: 127.0.0.1:-1")
        .replace(/store_dir: .*$/m, `store_dir: "${join(dir, "js")}"`);
      expect(conf).toContain("no_auth_user: client");
      return conf;
    },
    {
      LEASEHOLD_SERVICE_PASSWORD: PASSWORD,
      LEASEHOLD_APPEND_PASSWORD: APPEND_PASSWORD,
      LEASEHOLD_AUDITOR_PASSWORD: "test-auditor-password",
    },
  );
  url = server.url;
  serviceConn = await connect({ servers: url, user: "leasehold", pass: PASSWORD });
  appendConn = await connect({ servers: url, user: "leasehold-append", pass: APPEND_PASSWORD, inboxPrefix: "_INBOX_leasehold-append" });
  service = await startService({
    nc: serviceConn,
    appendNc: appendConn,
    config: resolveConfig({ nats: url }),
    logger: pino({ level: "silent" }),
  });
});

afterAll(async () => {
  await service?.stop();
  await serviceConn?.close();
  await appendConn?.close();
  await server?.stop();
});

async function anonymous(): Promise<NatsConnection> {
  return connect({ servers: url, name: "no-credentials" });
}

describe("nats.conf least privilege", () => {
  it("lets a client without credentials send requests and durable commands and read the stream", async () => {
    const nc = await anonymous();
    try {
      const acquired = await call<{ lease: { generation: number } }>(nc, "leasehold", "lock.acquire", { name: "conf", owner: "me" });
      expect(acquired.body.lease.generation).toBe(1);
      const ack = await jetstream(nc).publish("leasehold.cmd.lock.reset", JSON.stringify({ name: "conf", requestId: "r1" }), {
        msgID: "r1",
      });
      expect(ack.stream).toBe("LEASEHOLD_COMMANDS");
      const log = await JetStreamEventLog.attach(nc, {
        stream: "LEASEHOLD_EVENTS",
        subjects: "leasehold.events.>",
        dedupWindowMs: 120_000,
      });
      await vi.waitFor(async () => expect((await log.readSubject(new Subjects("leasehold").event("lock", "conf"), 1)).length).toBe(2));
    } finally {
      await nc.close();
    }
  });

  it("refuses a client without credentials every write the service alone may make", async () => {
    const nc = await anonymous();
    try {
      const js = jetstream(nc);
      const jsm = await jetstreamManager(nc);
      const before = (await jsm.streams.info("LEASEHOLD_EVENTS")).state.messages;
      await expect(js.publish("leasehold.events.lock.conf", "{}", { timeout: 2000 })).rejects.toThrow(/Permissions Violation/);
      await expect(jsm.streams.delete("LEASEHOLD_EVENTS")).rejects.toThrow(/Permissions Violation/);
      await expect(jsm.streams.purge("LEASEHOLD_EVENTS")).rejects.toThrow(/Permissions Violation/);
      const violations: string[] = [];
      void (async () => {
        for await (const s of nc.status()) if (s.type === "error") violations.push(String((s as { error?: Error }).error?.message));
      })();
      // Taking a durable command: the pull request itself is refused, so nothing is delivered.
      // (The allow-list does not even let it look the consumer up.)
      await expect(js.consumers.get("LEASEHOLD_COMMANDS", "leasehold-commands")).rejects.toThrow(
        /Permissions Violation.*CONSUMER\.INFO\.LEASEHOLD_COMMANDS/,
      );
      // Answering (or stealing) requests in the service's queue group.
      nc.subscribe("leasehold.v1.>", { queue: "leasehold" });
      await vi.waitFor(() => expect(violations.join("\n")).toMatch(/Subscription to "leasehold\.v1\.>"/));
      expect((await jsm.streams.info("LEASEHOLD_EVENTS")).state.messages).toBe(before);
    } finally {
      await nc.close();
    }
  });

  it("refuses a client without credentials each write only the service may make, one by one: events, command errors, snapshots, streams, command consumers", async () => {
    const nc = await anonymous();
    try {
      expect(await expectServiceOnlyWritesRefused(nc, appendConn, new Subjects("leasehold"))).toBeGreaterThan(20);
    } finally {
      await nc.close();
    }
  });
});
