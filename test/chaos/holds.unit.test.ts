import { describe, expect, it } from "vitest";
import { localDeadline } from "../../src/client/index.ts";
import type { OpRecord } from "./history.ts";
import { holdsOf, overlappingHolds, untilExpiresAt } from "./holds.ts";

let ids = 0;
const T = Date.parse("2026-03-01T00:00:00.000Z");
const at = (ms: number) => new Date(T + ms).toISOString();

/** An answered lock operation of `client`, sent at `from` and answered at `to` (ms after T). */
function op(client: string, command: string, body: Record<string, unknown>, from: number, to: number, lease?: object): OpRecord {
  return {
    id: ++ids,
    client,
    command,
    body,
    requestId: `r${ids}`,
    invokeAt: T + from,
    returnAt: T + to,
    result: { status: "ok", body: lease === undefined ? {} : { lease } },
    attempts: [{ sentAt: T + from, endAt: T + to, outcome: "ok" }],
  };
}
const grant = (client: string, generation: number, etag: string, from: number, to: number, expiresAt: number, command = "lock.acquire") =>
  op(client, command, { name: "l" }, from, to, { name: "l", owner: client, generation, etag, expiresAt: at(expiresAt), ttlMs: 1000 });

describe("holds as clients with true clocks see them", () => {
  it("run from the granting answer to the latest expiry of the generation, or to the release of any of its etags", () => {
    const records = [
      grant("a", 1, "e1", 0, 10, 1000),
      grant("a", 1, "e2", 500, 510, 1500, "lock.renew"),
      op("a", "lock.release", { name: "l", etag: "e2" }, 1200, 1210),
    ];
    expect(holdsOf(records)).toMatchObject([{ lock: "l", generation: 1, client: "a", from: T + 10, until: T + 1200 }]);
  });

  it("ends where the latest renewal says, even when it shortens the lease", () => {
    const records = [
      grant("a", 1, "e1", 0, 10, 3000),
      grant("a", 1, "e2", 100, 110, 1000, "lock.renew"),
      grant("b", 2, "e3", 1000, 1010, 2000),
    ];
    expect(overlappingHolds(holdsOf(records))).toEqual([]);
  });

  it("finds a grant answered before the previous holder's lease expired, and none once the holder keeps a margin", () => {
    // b's grant came from an instance whose clock ran 300 ms ahead.
    const records = [grant("a", 1, "e1", 0, 10, 1000), grant("b", 2, "e3", 690, 700, 1700)];
    expect(overlappingHolds(holdsOf(records)).map(([x, y]) => [x.client, y.client])).toEqual([["a", "b"]]);
    expect(overlappingHolds(holdsOf(records, untilExpiresAt(300)))).toEqual([]);
  });

  it("ends a keeper's hold at its local deadline: the attempt's send plus the TTL less the margin", () => {
    const keeper = holdsOf([grant("a", 1, "e1", 100, 110, 5000)], (a) => localDeadline(a.sentAt, a.ttlMs, 200));
    expect(keeper).toMatchObject([{ from: T + 110, until: T + 100 + 1000 - 200 }]);
  });

  it("finds nothing in a history of handovers after expiry and release", () => {
    const records = [
      grant("a", 1, "e1", 0, 10, 1000),
      grant("b", 2, "e2", 1000, 1005, 2000),
      op("b", "lock.release", { name: "l", etag: "e2" }, 1500, 1510),
      grant("c", 3, "e3", 1520, 1530, 2500),
    ];
    expect(overlappingHolds(holdsOf(records))).toEqual([]);
  });
});
