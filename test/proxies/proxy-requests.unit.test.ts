/**
 * Input rules of the proxy endpoints (docs/protocol.md, Conventions and Proxies):
 * every ill-formed field is BAD_REQUEST, BAD_REQUEST comes before any state
 * check, and every identifier the limits allow works.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { TurnResult } from "../../src/actors/actor-runtime.ts";
import { startProxyHarness, type ProxyHarness } from "../support/proxy-harness.ts";

let h: ProxyHarness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

async function service(): Promise<ProxyHarness> {
  h = await startProxyHarness();
  return h;
}

function code(result: TurnResult): string {
  return result.ok ? "OK" : result.rejection.code;
}

const long = "x".repeat(257);
const longUtf8 = "é".repeat(129); // 258 bytes in UTF-8, 129 code units

describe("BAD_REQUEST", () => {
  const cases: [string, unknown][] = [
    ["register", { maxLeases: 1 }],
    ["register", { proxy: "", maxLeases: 1 }],
    ["register", { proxy: long, maxLeases: 1 }],
    ["register", { proxy: longUtf8, maxLeases: 1 }],
    ["register", '{"proxy":"\\ud800","maxLeases":1}'],
    ["register", { proxy: 7, maxLeases: 1 }],
    ["register", { proxy: "p" }],
    ["register", { proxy: "p", maxLeases: -1 }],
    ["register", { proxy: "p", maxLeases: 1.5 }],
    ["register", { proxy: "p", maxLeases: "1" }],
    ["register", { proxy: "p", maxLeases: 1, latencyMs: -1 }],
    ["register", { proxy: "p", maxLeases: 1, latencyMs: 0.5 }],
    ["register", { proxy: "p", maxLeases: 1, labels: [] }],
    ["register", { proxy: "p", maxLeases: 1, labels: "eu" }],
    ["register", { proxy: "p", maxLeases: 1, labels: { region: 1 } }],
    ["register", { proxy: "p", maxLeases: 1, healthy: "yes" }],
    ["remove", {}],
    ["remove", { proxy: "" }],
    ["acquire", {}],
    ["acquire", { ttlMs: 0 }],
    ["acquire", { ttlMs: -5 }],
    ["acquire", { ttlMs: 1.5 }],
    ["acquire", { ttlMs: "1000" }],
    ["acquire", { ttlMs: 1000, target: long }],
    ["acquire", { ttlMs: 1000, target: 3 }],
    ["acquire", { ttlMs: 1000, candidates: "p" }],
    ["acquire", { ttlMs: 1000, candidates: [""] }],
    ["acquire", { ttlMs: 1000, candidates: [long] }],
    ["acquire", { ttlMs: 1000, labels: { region: null } }],
    // The lease would end after 9999-12-31T23:59:59.999Z, which RFC 3339 cannot write.
    ["acquire", { ttlMs: Number.MAX_SAFE_INTEGER }],
    ["release", {}],
    ["release", { leaseId: "" }],
    ["release", { leaseId: long }],
    ["report", { leaseId: "x" }],
    ["report", { leaseId: "x", result: "slow" }],
    ["report", { leaseId: "", result: "ok" }],
    ["report", { leaseId: "x", result: "ok", target: long }],
    ["list", { requestId: "" }],
    ["counts", { requestId: "r".repeat(129) }],
    ["list", "not json"],
    ["counts", "[]"],
    ["list", "null"],
  ];
  for (const [op, body] of cases) {
    it(`${op} ${typeof body === "string" ? body : JSON.stringify(body).slice(0, 80)}`, async () => {
      const s = await service();
      const before = s.events().length;
      const result = await s.call(op, body);
      expect(code(result)).toBe("BAD_REQUEST");
      expect(s.events()).toHaveLength(before);
    });
  }

  it("a body over 64 KiB", async () => {
    const s = await service();
    const body = JSON.stringify({ proxy: "p", maxLeases: 1, labels: { pad: "x".repeat(64 * 1024) } });
    expect(code(await s.call("register", body))).toBe("BAD_REQUEST");
  });

  it("comes before UNKNOWN_PROXY, NO_MATCH and UNKNOWN_LEASE", async () => {
    const s = await service();
    expect(code(await s.call("acquire", { ttlMs: 0, candidates: ["ghost"] }))).toBe("BAD_REQUEST");
    expect(code(await s.call("acquire", { ttlMs: 0 }))).toBe("BAD_REQUEST");
    expect(code(await s.call("report", { leaseId: "ghost", result: "meh" }))).toBe("BAD_REQUEST");
    expect(code(await s.call("remove", { proxy: "" }))).toBe("BAD_REQUEST");
  });
});

describe("identifiers the limits allow", () => {
  const names = ["a.b", "*", ">", "a/b c", "ünï-çødé", "😀", "x".repeat(256), "é".repeat(128), "__proto__", "~", "-_"];
  it("work as proxy names and targets, end to end", async () => {
    const s = await service();
    for (const proxy of names) expect(code(await s.call("register", { proxy, maxLeases: 1 })), proxy).toBe("OK");
    for (const proxy of names) {
      const reply = await s.call("acquire", { ttlMs: 1000, candidates: [proxy], target: proxy });
      expect(reply.ok, proxy).toBe(true);
      const lease = (reply as { reply: { lease: { id: string; proxy: string; target: string } } }).reply.lease;
      expect(lease.proxy).toBe(proxy);
      expect(lease.target).toBe(proxy);
      expect(code(await s.call("report", { leaseId: lease.id, result: "banned", target: proxy }))).toBe("OK");
    }
    const counts = await s.call("counts", {});
    expect(counts.ok && Object.keys((counts.reply as { counts: object }).counts).sort()).toEqual([...names].sort());
    await s.restart();
    const list = await s.call("list", {});
    expect(list.ok && (list.reply as { proxies: { proxy: string }[] }).proxies.map((p) => p.proxy)).toEqual(
      [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    );
  });

  it("an empty body is an empty object", async () => {
    const s = await service();
    expect(await s.call("list", "")).toEqual({ ok: true, reply: { proxies: [] } });
  });
});
