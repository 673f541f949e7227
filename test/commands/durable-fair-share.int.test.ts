/**
 * Durable commands take their turn among the request/reply clients
 * (src/transport/command-consumer.ts, `fairShare`): on a real nats-server and
 * the real consumer, with a serve function that holds every command open
 * until the test lets it go, so that how many are served at once is seen
 * exactly. The clients' count and the clock are the test's.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { jetstream } from "@nats-io/jetstream";
import { CommandConsumer } from "../../src/transport/command-consumer.ts";
import type { Endpoint, ServeEndpoint, Served } from "../../src/transport/endpoint.ts";
import { PRESENT_FOR_MS, type RequestClients } from "../../src/transport/micro-service.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { connectNats, quietLogger, uniquePrefix } from "../support/nats.ts";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const ACQUIRE: Endpoint = {
  ...{ kind: "lock", op: "acquire", reads: false, operatorOp: false, waits: true },
  run: () => Promise.reject(new Error("the test's serve function runs the commands")),
};
const DONE = { result: { ok: true, value: {} }, response: { ok: true, body: {} } } as unknown as Served;
const MAX_ACTIVE = 8;

interface Held {
  /** Commands being served now (not let go yet), by requestId. */
  readonly open: Map<string, { finish(): void; park(): void; parked: boolean }>;
  /** The most served at once so far, parked ones left out. */
  readonly most: { active: number };
  readonly clients: RequestClients;
  readonly clock: { now: number };
  /** Publishes `n` durable acquires, each stored before it returns. */
  publish(n: number): Promise<void>;
  /** Lets every open command go (parked ones too), and the ones that start after, until `total` were served. */
  drain(total: number): Promise<void>;
}

/** A consumer on a fresh prefix whose serve function holds each command open; `clients` as the test sets them. */
async function heldConsumer(clients: RequestClients = { count: 0, lastAt: -Infinity }): Promise<Held> {
  const nc = await connectNats();
  cleanups.push(() => nc.close());
  const subjects = new Subjects(uniquePrefix());
  const open: Held["open"] = new Map();
  const most = { active: 0 };
  const activeNow = () => [...open.values()].filter((h) => !h.parked).length;
  const serve: ServeEndpoint = (_endpoint, data, delivery) =>
    new Promise<Served>((resolve) => {
      const { requestId } = JSON.parse(new TextDecoder().decode(data)) as { requestId: string };
      const held = {
        parked: false,
        finish: () => {
          open.delete(requestId);
          resolve(DONE);
        },
        park: () => {
          held.parked = true;
          delivery?.onWait?.();
        },
      };
      open.set(requestId, held);
      most.active = Math.max(most.active, activeNow());
    });
  const clock = { now: 1_000_000 };
  const consumer = await CommandConsumer.start({
    ...{ nc, subjects, endpoints: [ACQUIRE], serve, logger: quietLogger, dedupWindowMs: 60_000, replicas: 1, maxInFlight: 64 },
    fairShare: { clients, maxActive: MAX_ACTIVE, now: () => clock.now },
  });
  cleanups.push(async () => {
    for (const held of [...open.values()]) held.finish();
    await consumer.stop();
  });
  const js = jetstream(nc);
  let published = 0;
  let served = 0;
  return {
    ...{ open, most, clients, clock },
    async publish(n) {
      const subject = subjects.durableCommand("lock", "acquire");
      for (const end = published + n; published < end; published++) {
        await js.publish(subject, JSON.stringify({ name: `n${published}`, owner: "o", ttlMs: 1000, requestId: `r${published}` }));
      }
    },
    async drain(total) {
      while (served < total) {
        await vi.waitFor(() => expect(open.size).toBeGreaterThan(0), { timeout: 10_000, interval: 5 });
        for (const held of [...open.values()]) {
          held.finish();
          served++;
        }
      }
    },
  };
}

/** Request/reply clients present at the test's clock's now. */
const present = (count: number, held: { clock: { now: number } }): RequestClients => ({ count, lastAt: held.clock.now });

describe("durable commands beside request/reply clients", () => {
  it("alone, are served up to --command-concurrency at once", async () => {
    const held = await heldConsumer();
    await held.publish(100);
    await vi.waitFor(() => expect(held.open.size).toBe(64), { timeout: 10_000, interval: 5 });
    await held.drain(100);
    expect(held.most.active).toBe(64);
  });

  it("while two clients send requests, count as a third: floor(8 / 3) = 2 at once, every command served", async () => {
    const clients: RequestClients = { count: 0, lastAt: -Infinity };
    const held = await heldConsumer(clients);
    Object.assign(clients, present(2, held));
    await held.publish(40);
    await held.drain(40);
    expect(held.most.active).toBe(2);
  });

  it("a command parked waiting for a lock gives its place to the next", async () => {
    const clients: RequestClients = { count: 0, lastAt: -Infinity };
    const held = await heldConsumer(clients);
    Object.assign(clients, present(1, held)); // one client: floor(8 / 2) = 4 at once
    await held.publish(12);
    await vi.waitFor(() => expect(held.open.size).toBe(4), { timeout: 10_000, interval: 5 });
    for (const h of [...held.open.values()]) h.park();
    await vi.waitFor(() => expect(held.open.size).toBe(8), { timeout: 10_000, interval: 5 });
    expect(held.most.active).toBe(4);
    await held.drain(12);
    expect(held.most.active).toBe(4);
  });

  it("takes all of --command-concurrency again once the clients stopped sending", async () => {
    const clients: RequestClients = { count: 0, lastAt: -Infinity };
    const held = await heldConsumer(clients);
    Object.assign(clients, present(3, held)); // floor(8 / 4) = 2 at once
    await held.publish(30);
    await vi.waitFor(() => expect(held.open.size).toBe(2), { timeout: 10_000, interval: 5 });
    held.clock.now += PRESENT_FOR_MS + 1;
    held.open.values().next().value!.finish();
    await vi.waitFor(() => expect(held.open.size).toBe(29), { timeout: 10_000, interval: 5 });
    await held.drain(29);
  });
});
