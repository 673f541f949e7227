/**
 * The request schemas of the 1.1 additions (docs/protocol.md): a blocking
 * lock acquire's `waitMs` and a host's `maxLeases` cap are taken in every
 * form the contract allows and refused as BAD_REQUEST, naming the field, in
 * every other.
 */
import { describe, expect, it } from "vitest";
import { hostRequests } from "../../src/host/requests.ts";
import { lockRequests } from "../../src/lock/endpoints.ts";
import { parseRequest } from "../../src/transport/endpoint.ts";

const body = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));

describe("request schemas of the 1.1 additions", () => {
  it("takes lock.acquire with a whole waitMs >= 0 (the ceiling is the server's --max-wait-ms) and refuses anything else", () => {
    expect(parseRequest(lockRequests.acquire, body({ name: "a", owner: "o", waitMs: 1000 })).ok).toBe(true);
    expect(parseRequest(lockRequests.acquire, body({ name: "a", owner: "o", waitMs: 0 })).ok).toBe(true);
    for (const waitMs of [-1, 1.5, "10"]) {
      const refused = parseRequest(lockRequests.acquire, body({ name: "a", owner: "o", waitMs }));
      expect(refused).toMatchObject({ ok: false, rejection: { code: "BAD_REQUEST", message: expect.stringContaining("waitMs") } });
    }
  });

  it("takes host.set with a maxLeases cap (an integer >= 0) or null (no limit), and refuses any other cap as BAD_REQUEST", () => {
    for (const maxLeases of [0, 2, null]) {
      expect(parseRequest(hostRequests.set, body({ host: "h", healthy: true, maxLeases }))).toMatchObject({
        ok: true,
        value: { maxLeases },
      });
    }
    for (const maxLeases of [-1, 1.5, "2", true]) {
      const refused = parseRequest(hostRequests.set, body({ host: "h", healthy: true, maxLeases }));
      expect(refused).toMatchObject({ ok: false, rejection: { code: "BAD_REQUEST", message: expect.stringContaining("maxLeases") } });
    }
  });
});
