/**
 * The least-privilege setup as a user runs it: a nats-server started from
 * `leasehold nats-config --client alice --client bob --no-anonymous`, and the
 * `leasehold` commands themselves as processes, each connecting as its user
 * and so taking its reply prefix `_INBOX_<user>` without being told. The
 * service serves, alice and bob call, neither can read the other's replies,
 * a connection without credentials is refused, the auditor tails, audits
 * and replays; the typed client, given the user's prefix, gets its replies
 * and its awaited durable replies there.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { LeaseholdClient } from "../../src/client/index.ts";
import { inboxPrefixOf, passwordEnvOf } from "../../src/security/nats-permissions.ts";
import { defer, leasehold, waitForLog, type Proc } from "../cli/cli-process.ts";
import { startConfiguredServer, type ConfiguredServer } from "./configured-server.ts";

const PASSWORDS: Record<string, string> = { alice: "pw-alice", bob: "pw-bob", auditor: "pw-auditor" };
const SERVICE_PASSWORD = "pw-service";
const APPEND_PASSWORD = "pw-append";

let url: string;
let server: ConfiguredServer | undefined;

/** Runs `leasehold args` as `user` (credentials from the environment, as the docs advise) and waits for its exit. */
async function as(user: string | undefined, args: string[]): Promise<{ code: number | null; proc: Proc }> {
  const env: Record<string, string> =
    user === undefined ? {} : { LEASEHOLD_USER: user, LEASEHOLD_PASSWORD: user === "leasehold" ? SERVICE_PASSWORD : PASSWORDS[user]! };
  const proc = leasehold([...args.slice(0, 1), "--nats", url, ...args.slice(1)], { env });
  return { code: (await proc.exited).code, proc };
}

/** `leasehold serve` as the service user, stopped after the test. */
async function serveAsServiceUser(): Promise<void> {
  const serve = leasehold(["serve", "--nats", url, "--log-format", "json"], {
    env: {
      LEASEHOLD_USER: "leasehold",
      LEASEHOLD_PASSWORD: SERVICE_PASSWORD,
      LEASEHOLD_APPEND_USER: "leasehold-append",
      LEASEHOLD_APPEND_PASSWORD: APPEND_PASSWORD,
    },
  });
  defer(async () => {
    serve.child.kill("SIGTERM");
    await serve.exited;
  });
  await waitForLog(serve, "leasehold serving");
}

beforeAll(async () => {
  const config = leasehold(["nats-config", "--client", "alice", "--client", "bob", "--no-anonymous", "--listen", "127.0.0.1:-1"]);
  expect((await config.exited).code, config.stderr()).toBe(0);
  const env: Record<string, string> = { LEASEHOLD_SERVICE_PASSWORD: SERVICE_PASSWORD, LEASEHOLD_APPEND_PASSWORD: APPEND_PASSWORD };
  for (const [user, pw] of Object.entries(PASSWORDS)) env[passwordEnvOf(user)] = pw;
  server = await startConfiguredServer(
    (dir) => config.stdout().replace(/store_dir: .*/, `store_dir: ${JSON.stringify(join(dir, "js"))}`),
    env,
  );
  url = server.url;
}, 30_000);

afterAll(() => server?.stop());

describe("nats-config's named users, every command run as its user", () => {
  it("serves as the service user; alice and bob call; nobody else reads their replies; anonymous is refused; the auditor tails and audits", async () => {
    await serveAsServiceUser();

    // Alice listens where bob's replies would go: the server refuses her, and she receives nothing.
    const alice = await connect({ servers: url, user: "alice", pass: PASSWORDS.alice, inboxPrefix: inboxPrefixOf("alice") });
    defer(() => alice.close());
    const refused = violations(alice);
    const overheard: string[] = [];
    // A refused subscription's callback is handed the refusal (and no message); only messages count.
    const listen = (e: Error | null, m: { subject: string }) => {
      if (e === null) overheard.push(m.subject);
    };
    alice.subscribe(`${inboxPrefixOf("bob")}.>`, { callback: listen });
    alice.subscribe("_INBOX.>", { callback: listen });
    await vi.waitFor(() => expect(refused()).toMatch(/Subscription to "_INBOX\.>"/), { timeout: 5000, interval: 20 });
    expect(refused()).toMatch(/Subscription to "_INBOX_bob\.>"/);

    const acquired = await as("alice", ["call", "lock.acquire", '{"name":"reports","owner":"alice"}']);
    expect(acquired.code, acquired.proc.stderr()).toBe(0);
    expect(JSON.parse(acquired.proc.stdout())).toMatchObject({ lease: { owner: "alice", generation: 1 } });
    // The rest only read: side by side, as each is a process start.
    const [read, status, anonymous, tail, audit, replay, forged, wrongInbox] = await Promise.all([
      as("bob", ["call", "lock.get", '{"name":"reports"}']),
      as("bob", ["status", "--json"]),
      as(undefined, ["call", "lock.get", '{"name":"reports"}']),
      as("auditor", ["tail", "--from-seq", "1", "--limit", "1", "--kind", "lock"]),
      as("auditor", ["audit"]),
      as("auditor", ["replay", "--kind", "lock", "--json"]),
      // A prefix this user has no rights on, and a reply prefix it may not use.
      as("alice", ["status", "--prefix", "forged"]),
      as("alice", ["call", "--inbox-prefix", "_INBOX", "lock.get", '{"name":"reports"}']),
    ]);
    expect(read.code, read.proc.stderr()).toBe(0);
    expect(JSON.parse(read.proc.stdout())).toMatchObject({ lease: { owner: "alice" } });
    expect(status.code, status.proc.stderr()).toBe(0);
    expect(overheard).toEqual([]);

    expect(anonymous.code).toBe(2);
    expect(anonymous.proc.stderr()).toMatch(/refused the credentials/);

    expect(tail.code, tail.proc.stderr()).toBe(0);
    expect(tail.proc.stdout()).toMatch(/lock reports LockAcquired/);
    expect(audit.code, audit.proc.stderr()).toBe(0);
    expect(replay.code, replay.proc.stderr()).toBe(0);

    // The hint names --prefix, not JetStream.
    expect(forged.code).toBe(2);
    expect(forged.proc.stderr()).toMatch(/check --prefix, or the user's permissions/);
    expect(forged.proc.stderr()).not.toMatch(/JetStream enabled/);
    // One line naming --inbox-prefix.
    expect(wrongInbox.code).toBe(2);
    expect(wrongInbox.proc.stderr().trim().split("\n")).toHaveLength(1);
    expect(wrongInbox.proc.stderr()).toMatch(/set --inbox-prefix/);
  }, 120_000);

  it("the typed client gets its replies, awaited durable ones included, under the user's inbox prefix", async () => {
    await serveAsServiceUser();
    // The way docs/client.md shows: the connection carries the prefix, and so every reply of nats.js and the client.
    const bob = await connect({ servers: url, user: "bob", pass: PASSWORDS.bob, inboxPrefix: inboxPrefixOf("bob") });
    defer(() => bob.close());
    const client = new LeaseholdClient(bob);
    expect(client.inboxPrefix).toBe("_INBOX_bob");
    const set = await client.durable.host.set({ host: "h1", healthy: true }, { awaitReply: true, timeoutMs: 10_000 });
    expect(set.reply).toEqual({ host: "h1" });

    // A connection opened without it: the client option covers its requests (JetStream's own requests follow the connection).
    const bare: NatsConnection = await connect({ servers: url, user: "bob", pass: PASSWORDS.bob });
    defer(() => bare.close());
    const plain = new LeaseholdClient(bare, { inboxPrefix: inboxPrefixOf("bob") });
    await plain.host.set({ host: "h2", healthy: true });
    expect((await plain.host.list()).hosts.map((h) => h.host)).toEqual(["h1", "h2"]);
  });
});

describe("the typed client as a named user without its inbox prefix", () => {
  it("is refused with a hint naming inboxPrefix", async () => {
    await serveAsServiceUser();
    const alice = await connect({ servers: url, user: "alice", pass: PASSWORDS.alice });
    defer(() => alice.close());
    const client = new LeaseholdClient(alice, { timeoutMs: 3000 });
    const error = await client.host.list().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/may not receive replies under _INBOX: connect with inboxPrefix: "_INBOX_<user>"/);
  });
});

/** The permission violations the server reports on `nc` from now on. */
function violations(nc: NatsConnection): () => string {
  const seen: string[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error") seen.push(String((s as { error?: Error }).error?.message));
  })();
  return () => seen.join("\n");
}
