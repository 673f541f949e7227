/**
 * The shipped nats.conf is `leasehold nats-config`'s output for the default
 * prefix, and the generator grants by allow-list only, each role its own:
 * the answering service user publishes only to reply prefixes, never with
 * `allow_responses`; the appending one alone holds the streams.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../src/cluster/nats-server-binary.ts";
import { natsAccounts, natsUsers, serviceFlagsOf } from "../../src/security/nats-permissions.ts";
import { natsConfig } from "../../src/security/nats-config-text.ts";

/** Reserved namespaces no reply may go to. */
const RESERVED = /^(a\.b\.|\$JS\.|\$JSC\.|\$O\.|\$KV\.|\$SRV\.|\$SYS\.)/;

const withoutComments = (text: string) => text.replace(/#.*$/gm, "");

describe("nats-config", () => {
  it("is what nats.conf ships (regenerate with `npx leasehold nats-config --out nats.conf --force`)", () => {
    expect(readFileSync(`${PROJECT_ROOT}nats.conf`, "utf8")).toBe(natsConfig({ prefix: "leasehold", clients: [], anonymousClient: true }));
  });

  it("allows, never denies, and keeps each role to its own subjects", () => {
    const text = natsConfig({ prefix: "a.b", clients: ["alice"], anonymousClient: false, accountsOnly: true });
    expect(withoutComments(text)).not.toMatch(/deny|allow_responses/);
    expect(text).not.toMatch(/^listen:/m);
    expect(text).toMatch(/^accounts \{\n {2}A_B \{/m);
    const users = natsUsers({ prefix: "a.b", clients: ["alice"] });
    expect(users.map((u) => [u.user, u.role])).toEqual([
      ["a.b-service", "service"],
      ["a.b-append", "appender"],
      ["alice", "client"],
      ["a.b-auditor", "auditor"],
    ]);
    const [service, appender, alice, auditor] = users;
    expect(appender!.permissions.publish).toContain("a.b.events.>");
    expect(appender!.permissions.subscribe).toEqual(["_INBOX_a.b-append.>"]);
    // The answering user: replies to the clients' inboxes only, no JetStream, never the appender's inbox.
    expect(service!.permissions.publish).toEqual(["_INBOX_alice.>"]);
    for (const other of [service!, alice!, auditor!]) {
      expect(
        other.permissions.publish.some(
          (s) => s.startsWith("a.b.events") || s.includes("STREAM.CREATE") || s.includes("STREAM.DELETE") || s.startsWith("$KV"),
        ),
      ).toBe(false);
    }
    for (const other of [alice!, auditor!])
      expect(other.permissions.subscribe.some((s) => s.startsWith("a.b.v1") || s === ">" || s.startsWith("_INBOX."))).toBe(false);
    expect(alice!.permissions.subscribe).toContain("_INBOX_alice.>");
    expect(auditor!.permissions.publish.every((s) => s.startsWith("$JS.API."))).toBe(true);
    expect(() => natsUsers({ prefix: "a", clients: ["bad name"] })).toThrow(/client user names/);
    expect(() => natsUsers({ prefix: "a", clients: ["a-append"] })).toThrow(/already has/);
  });

  it("gives the service its own account in the account layout, and each client and operator one that imports it with share", () => {
    const options = { prefix: "a.b", layout: "accounts", clients: ["alice", "bob"], operators: ["ops"] } as const;
    const [service, ...others] = natsAccounts(options);
    expect([service!.name, ...others.map((a) => a.name)]).toEqual(["A_B", "alice", "bob", "ops"]);
    expect(service!.jetstream).toBe(true);
    expect(service!.users.map((u) => u.role)).toEqual(["service", "appender", "auditor"]);
    const answering = service!.users[0]!;
    expect(answering.permissions.publish).toEqual(["_R_.>", "_INBOX_alice.>", "_INBOX_bob.>", "_INBOX_ops.>"]);
    expect(answering.permissions.publish.some((s) => RESERVED.test(s))).toBe(false);
    expect(service!.exports).toContainEqual({ service: "a.b.cmd.*.>", accountTokenPosition: 4 });
    for (const account of others) {
      expect(account.jetstream).toBe(false);
      expect(account.imports).toContainEqual({ kind: "service", account: "A_B", subject: "a.b.v1.>", share: true });
      expect(account.imports).toContainEqual({ kind: "service", account: "A_B", subject: `a.b.cmd.${account.name}.>`, to: "a.b.cmd.>" });
    }
    expect(serviceFlagsOf(options)).toEqual(["--principals", "nats-request-info", "--operators", "ops/*"]);
    const text = natsConfig(options);
    expect(text).toMatch(/account_token_position: 4/);
    expect(text).toMatch(/share: true/);
    expect(withoutComments(text)).not.toMatch(/no_auth_user|allow_responses|deny/);
    expect(text).toContain("leasehold serve --principals nats-request-info --operators 'ops/*'");
    expect(() => natsAccounts({ ...options, anonymousClient: true })).toThrow(/no anonymous client/);
    expect(() => natsAccounts({ ...options, clients: ["a.b"] })).toThrow(/one subject token/);
    expect(() => natsAccounts({ ...options, operators: ["alice"] })).toThrow(/named twice/);
    expect(() => natsAccounts({ prefix: "a", operators: ["ops"] })).toThrow(/account layout/);
  });
});
