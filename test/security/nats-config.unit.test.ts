/**
 * The shipped nats.conf is `leasehold nats-config`'s output for the default
 * prefix, and the generator grants by allow-list only, each role its own.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { PROJECT_ROOT } from "../../src/cluster/nats-server-binary.ts";
import { natsConfig, natsUsers } from "../../src/security/nats-permissions.ts";

describe("nats-config", () => {
  it("is what nats.conf ships (regenerate with `npx leasehold nats-config > nats.conf`)", () => {
    expect(readFileSync(`${PROJECT_ROOT}nats.conf`, "utf8")).toBe(natsConfig({ prefix: "leasehold", clients: [], anonymousClient: true }));
  });

  it("allows, never denies, and keeps each role to its own subjects", () => {
    const text = natsConfig({ prefix: "a.b", clients: ["alice"], anonymousClient: false, accountsOnly: true });
    expect(text).not.toMatch(/deny/);
    expect(text).not.toMatch(/^listen:/m);
    expect(text).toMatch(/^accounts \{\n {2}A_B \{/m);
    const users = natsUsers({ prefix: "a.b", clients: ["alice"] });
    expect(users.map((u) => [u.user, u.role])).toEqual([
      ["a.b-service", "service"],
      ["alice", "client"],
      ["a.b-auditor", "auditor"],
    ]);
    const [service, alice, auditor] = users;
    expect(service!.permissions.publish).toContain("a.b.events.>");
    for (const other of [alice!, auditor!]) {
      expect(
        other.permissions.publish.some(
          (s) => s.startsWith("a.b.events") || s.includes("STREAM.CREATE") || s.includes("STREAM.DELETE") || s.startsWith("$KV"),
        ),
      ).toBe(false);
      expect(other.permissions.subscribe.some((s) => s.startsWith("a.b.v1") || s === ">" || s.startsWith("_INBOX."))).toBe(false);
    }
    expect(alice!.permissions.subscribe).toContain("_INBOX_alice.>");
    expect(auditor!.permissions.publish.every((s) => s.startsWith("$JS.API."))).toBe(true);
    expect(() => natsUsers({ prefix: "a", clients: ["bad name"] })).toThrow(/client user names/);
  });
});
