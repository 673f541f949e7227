import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { FairQueue } from "../../src/transport/fair-queue.ts";
import { replyClient } from "../../src/transport/micro-service.ts";
import type { Msg } from "@nats-io/nats-core";

/** Every item, taken with every client eligible. */
function drain<T>(queue: FairQueue<T>): T[] {
  const out: T[] = [];
  for (let item = queue.next(() => true); item !== undefined; item = queue.next(() => true)) out.push(item);
  return out;
}

describe("FairQueue", () => {
  it("serves clients in rotation, each client's requests in the order they came", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom("a", "b", "c", "d"), { maxLength: 200 }), (clients) => {
        const queue = new FairQueue<{ client: string; n: number }>(1000, 1000);
        clients.forEach((client, n) => expect(queue.push(client, { client, n })).toBeUndefined());
        const out = drain(queue);
        expect(out).toHaveLength(clients.length);
        expect(queue.size).toBe(0);
        // Each client's own order is kept.
        for (const c of new Set(clients)) {
          const mine = out.filter((i) => i.client === c).map((i) => i.n);
          expect(mine).toEqual([...mine].sort((x, y) => x - y));
        }
        // Round r takes one item of every client that has more than r, in the order the clients first came.
        const firstCome = [...new Set(clients)];
        const expected: string[] = [];
        for (let round = 0; expected.length < clients.length; round++) {
          for (const c of firstCome) if (clients.filter((x) => x === c).length > round) expected.push(c);
        }
        expect(out.map((i) => i.client)).toEqual(expected);
      }),
    );
  });

  it("takes out the stale requests (each client's oldest), the rest keeping their order and clients their turns", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom("a", "b", "c"), fc.boolean()), { maxLength: 100 }), (pushes) => {
        // A request is stale while every earlier one of its client is: stale ones are a prefix of each client's queue.
        const seenFresh = new Set<string>();
        const items = pushes.map(([client, old], n) => {
          const stale = old && !seenFresh.has(client);
          if (!stale) seenFresh.add(client);
          return { client, n, stale };
        });
        const queue = new FairQueue<(typeof items)[number]>(1000, 1000);
        for (const item of items) queue.push(item.client, item);
        const expired = queue.expire((item) => item.stale);
        expect(expired.map((i) => i.n).sort((x, y) => x - y)).toEqual(items.filter((i) => i.stale).map((i) => i.n));
        expect(queue.size).toBe(items.length - expired.length);
        const rest = drain(queue);
        expect(rest.map((i) => i.n).sort((x, y) => x - y)).toEqual(items.filter((i) => !i.stale).map((i) => i.n));
        for (const c of ["a", "b", "c"]) {
          const mine = rest.filter((i) => i.client === c).map((i) => i.n);
          expect(mine).toEqual([...mine].sort((x, y) => x - y));
        }
      }),
    );
  });

  it("passes over a client that may not be served now, and keeps its place for later", () => {
    const queue = new FairQueue<string>(10, 100);
    for (const [client, item] of [
      ["a", "a1"],
      ["b", "b1"],
      ["a", "a2"],
      ["b", "b2"],
    ] as const)
      queue.push(client, item);
    expect(queue.next((c) => c !== "a")).toBe("b1");
    expect(queue.next((c) => c !== "a")).toBe("b2");
    expect(queue.next((c) => c !== "a")).toBeUndefined();
    expect(drain(queue)).toEqual(["a1", "a2"]);
  });

  it("refuses past a client's bound, and past the bound of all clients together", () => {
    const queue = new FairQueue<number>(2, 3);
    expect(queue.push("a", 1)).toBeUndefined();
    expect(queue.push("a", 2)).toBeUndefined();
    expect(queue.push("a", 3)).toBe("client-full");
    expect(queue.push("b", 4)).toBeUndefined();
    expect(queue.push("c", 5)).toBe("queue-full");
    expect(queue.size).toBe(3);
    expect(drain(queue)).toEqual([1, 4, 2]);
    expect(queue.push("a", 6)).toBeUndefined();
  });

  it("stays first-in first-out through long runs (its arrays are compacted as they drain)", () => {
    const queue = new FairQueue<number>(100_000, 100_000);
    const out: number[] = [];
    for (let n = 0; n < 5000; n++) {
      queue.push("a", n);
      if (n % 3 !== 0) out.push(queue.next(() => true)!);
    }
    out.push(...drain(queue));
    expect(out).toEqual(Array.from({ length: 5000 }, (_, n) => n));
  });
});

describe("replyClient", () => {
  const of = (reply: string | undefined) => replyClient({ reply } as Msg);

  it("names the connection of a muxed reply inbox, not the request", () => {
    expect(of("_INBOX.Gq4v0nCfJ4X2hPq1vHTEz8.Gq4v0nCfJ4X2hPq1vHTF0r")).toBe("_INBOX.Gq4v0nCfJ4X2hPq1vHTEz8");
    expect(of("_INBOX_alice.Gq4v0nCfJ4X2hPq1vHTEz8.7")).toBe("_INBOX_alice.Gq4v0nCfJ4X2hPq1vHTEz8");
  });

  it("takes a reply subject of two tokens or fewer whole, and no reply as one client", () => {
    expect(of("_INBOX.Gq4v0nCfJ4X2hPq1vHTEz8")).toBe("_INBOX.Gq4v0nCfJ4X2hPq1vHTEz8");
    expect(of("reply")).toBe("reply");
    expect(of(undefined)).toBe("");
  });
});
