/**
 * Two service instances on one prefix, 32 clients acquiring the same keys at
 * once: every key is on exactly one host at any instant, by the replies and
 * by the stream. Then a host fails, and every key it held moves exactly once.
 */
import { describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import type { RecordedEvent } from "../../src/events/envelope.ts";
import { uniquePrefix } from "../support/nats.ts";
import { dataOf, eventsOfKind, ok, routeClient, useRouteServices, type RouteClient } from "../support/route-fixtures.ts";

const h = useRouteServices();

const CLIENTS = 32;
const HOSTS = ["h1", "h2", "h3", "h4"];
/** Route-level keys and conversations under them, over three routes and two models. */
const KEYS = ["r1", "r2", "r3"].flatMap((route) => ["", "c1", "c2"].flatMap((fp) => ["m", "n"].map((model) => ({ route, fp, model }))));
const id = (k: { route: string; fp: string; model: string }) => JSON.stringify([k.route, k.fp, k.model]);

/** Every client acquires every key, each in its own order, all at once; answers the hosts seen per key. */
async function acquireAll(clients: RouteClient[], round: number): Promise<Map<string, Set<string>>> {
  const seen = new Map<string, Set<string>>();
  await Promise.all(
    clients.map(async (client, i) => {
      // A different rotation per client, so keys are raced from different starting points.
      const order = KEYS.map((_, j) => KEYS[(j + i * 5 + round) % KEYS.length]!);
      await Promise.all(
        order.map(async (k) => {
          const body = ok(await client.acquire({ ...k, candidates: HOSTS }));
          let hosts = seen.get(id(k));
          if (hosts === undefined) seen.set(id(k), (hosts = new Set()));
          hosts.add(body.host!);
        }),
      );
    }),
  );
  return seen;
}

/** Replays the route events in stream order and answers, per key, the hosts it was placed on, checking one host at a time. */
function placements(events: RecordedEvent[]): Map<string, RecordedEvent[]> {
  const byKey = new Map<string, RecordedEvent[]>();
  const current = new Map<string, string>();
  for (const e of events) {
    if (e.event.type !== "RouteLeasePlaced") continue;
    const d = dataOf(e) as { fp: string; model: string; host: string; from: string };
    const k = id({ route: e.event.id, fp: d.fp, model: d.model });
    // The event says where the lease was: it must be where the stream last put it.
    expect(d.from).toBe(current.get(k) ?? "");
    current.set(k, d.host);
    byKey.set(k, [...(byKey.get(k) ?? []), e]);
  }
  return byKey;
}

describe("two instances, 32 clients, the same keys", () => {
  it("keeps every key on exactly one host, and moves each key of a failed host exactly once", async () => {
    const prefix = uniquePrefix();
    const a = await h.service(prefix);
    const b = await h.service(prefix);
    const admin = routeClient(a.nc, prefix);
    for (const host of HOSTS) ok(await admin.setHost({ host, healthy: true }));
    const connections: NatsConnection[] = [];
    for (let i = 0; i < CLIENTS; i++) connections.push(await h.connect());
    const clients = connections.map((nc) => routeClient(nc, prefix, 20_000));

    const first = await acquireAll(clients, 0);
    for (const k of KEYS) expect([...first.get(id(k))!], id(k)).toHaveLength(1);
    let byKey = placements(await eventsOfKind(a.service, "route"));
    for (const k of KEYS) {
      const placed = byKey.get(id(k)) ?? [];
      expect(placed, id(k)).toHaveLength(1);
      expect(dataOf(placed[0]!).host).toBe([...first.get(id(k))!][0]);
    }
    // A conversation starts where its route lives.
    for (const k of KEYS.filter((k) => k.fp !== "")) {
      const own = first.get(id({ ...k, fp: "" }))!;
      const conv = first.get(id(k))!;
      if (dataOf(byKey.get(id(k))![0]!).reused === true) expect([...conv]).toEqual([...own]);
    }

    // Both instances decided acquires (the queue group spread them).
    const stats = await Promise.all(
      [a, b].map(async (s) => {
        const msg = await s.nc.request(`$SRV.STATS.leasehold.${s.service.micro.id}`, undefined, { timeout: 5000 });
        const body = msg.json<{ endpoints: { name: string; num_requests: number }[] }>();
        return body.endpoints.find((e) => e.name === "route_acquire")!.num_requests;
      }),
    );
    for (const n of stats) expect(n).toBeGreaterThan(0);
    expect(stats[0]! + stats[1]!).toBe(CLIENTS * KEYS.length);

    // The busiest host fails (told through the other instance).
    const counts = new Map<string, number>();
    for (const hosts of first.values()) for (const host of hosts) counts.set(host, (counts.get(host) ?? 0) + 1);
    const failing = [...counts.entries()].sort((x, y) => y[1] - x[1])[0]![0];
    ok(await routeClient(b.nc, prefix).setHost({ host: failing, healthy: false }));

    const second = await acquireAll(clients, 1);
    const events = await eventsOfKind(b.service, "route");
    byKey = placements(events);
    for (const k of KEYS) {
      const hosts = [...second.get(id(k))!];
      expect(hosts, id(k)).toHaveLength(1);
      expect(hosts[0]).not.toBe(failing);
      const before = [...first.get(id(k))!][0]!;
      const placed = byKey.get(id(k))!;
      if (before === failing) {
        // Exactly one replacement, recorded as leaving the failed host.
        expect(placed, id(k)).toHaveLength(2);
        expect(dataOf(placed[1]!)).toMatchObject({ host: hosts[0], from: failing, reason: "unhealthy" });
      } else {
        expect(placed, id(k)).toHaveLength(1);
        expect(hosts[0]).toBe(before);
      }
    }
    const snapshot = ok(await admin.snapshot()).leases!;
    expect(snapshot).toHaveLength(KEYS.length);
    for (const l of snapshot) expect([...second.get(id(l))!]).toEqual([l.host]);
  });
});
