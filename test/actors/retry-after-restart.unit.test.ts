/**
 * A retry's answer after a restart equals the first answer, for every op that
 * records an event: random histories of every kind's ops with a `requestId`
 * each, run through the in-memory service (the real runtime, modules and
 * endpoints), then every request sent again, with its own body and
 * `requestId`, to a service started again over the same stream: folding it
 * whole, from the snapshots a stop left and the stream after them, and from
 * the snapshots alone. The fold remembers most replies by their event and
 * renders them only when a retry asks (src/projections/fold-store.ts);
 * each start here takes that path.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { TurnResult } from "../../src/actors/actor-runtime.ts";
import { isUnparsable } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { MemoryProjectionSnapshotStore } from "../../src/projections/snapshot-stores.ts";
import { startSimService, type SimService } from "../tools/support/sim-service.ts";

const LOCKS = ["a", "b", "c"];
const PROXIES = ["p1", "p2"];
const HOSTS = ["h1", "h2"];
const ROUTES = ["r1", "r2"];
const OWNERS = ["w1", "w2"];
const SETTINGS = { lockTtlMs: 5000, maxTtlMs: 30_000, cooldownMs: 20_000, routeIdleMs: 600_000, dedupWindowMs: 120_000 };

/** One request: its op, and the numbers its body's fields are picked by. */
interface Draw {
  readonly op: string;
  readonly x: number;
  readonly y: number;
}

/** What a history's requests learned, so later ones can name it (etags, lease ids, session ids). */
interface Learned {
  readonly etags: Map<string, string>;
  readonly leases: string[];
  readonly sessions: string[];
}

const pick = <T>(xs: readonly T[], n: number): T => xs[n % xs.length]!;

/** Every op that may record an event, with a body drawn from `d`. */
const BODIES: Record<string, (d: Draw, l: Learned) => Record<string, unknown>> = {
  "lock.acquire": (d) => ({ name: pick(LOCKS, d.x), owner: pick(OWNERS, d.y), ttlMs: 1000 + (d.y % 5) * 1000 }),
  "lock.renew": (d, l) => ({ name: pick(LOCKS, d.x), owner: pick(OWNERS, d.y), etag: l.etags.get(pick(LOCKS, d.x)) ?? "none" }),
  "lock.release": (d, l) => ({ name: pick(LOCKS, d.x), etag: l.etags.get(pick(LOCKS, d.x)) ?? "none" }),
  "lock.reset": (d) => ({ name: pick(LOCKS, d.x) }),
  "proxy.register": (d) => ({
    proxy: pick(PROXIES, d.x),
    maxLeases: 1 + (d.y % 3),
    latencyMs: d.y % 50,
    labels: {},
    healthy: d.y % 5 !== 0,
  }),
  "proxy.remove": (d) => ({ proxy: pick(PROXIES, d.x) }),
  "proxy.acquire": (d) => ({ ttlMs: 5000, target: pick(["", "t1"], d.x), candidates: [pick(PROXIES, d.y)], labels: {} }),
  "proxy.release": (d, l) => ({ leaseId: l.leases.length === 0 ? "none" : pick(l.leases, d.x) }),
  "proxy.report": (d, l) => ({
    leaseId: l.leases.length === 0 ? "none" : pick(l.leases, d.x),
    result: pick(["ok", "rate_limited", "banned"], d.y),
    target: "",
  }),
  "host.set": (d) => ({ host: pick(HOSTS, d.x), healthy: d.y % 4 !== 0, draining: d.y % 7 === 0 }),
  "route.acquire": (d) => ({ route: pick(ROUTES, d.x), fp: pick(["", "f1", "f2"], d.y), model: "m", candidates: HOSTS }),
  "route.move": (d) => ({ route: pick(ROUTES, d.x), fp: pick(["", "f1"], d.y), model: "m", host: pick(HOSTS, d.y) }),
  "route.candidates": (d) => ({ route: pick(ROUTES, d.x), hosts: [pick(HOSTS, d.y)] }),
  "route.pin": (d) => ({ route: pick(ROUTES, d.x), host: pick(HOSTS, d.y) }),
  "route.unpin": (d) => ({ route: pick(ROUTES, d.x) }),
  "route.release": (d) => ({ route: pick(ROUTES, d.x) }),
  "session.open": (d) => ({ owner: pick(OWNERS, d.y), ttlMs: 2000 + (d.y % 3) * 1000 }),
  "session.keepalive": (d, l) => ({ id: l.sessions.length === 0 ? "none" : pick(l.sessions, d.x) }),
  "session.close": (d, l) => ({ id: l.sessions.length === 0 ? "none" : pick(l.sessions, d.x) }),
};

const draw: fc.Arbitrary<Draw> = fc.record({ op: fc.constantFrom(...Object.keys(BODIES)), x: fc.nat(99), y: fc.nat(99) });

/** A request sent, and what it was first answered. */
interface Sent {
  readonly op: string;
  readonly body: Record<string, unknown>;
  readonly first: TurnResult;
}

/** Sends `draws` to `sim`, each with a requestId of its own, stepping the clock a little between them. */
async function run(sim: SimService, draws: readonly Draw[], from: number, learned: Learned): Promise<Sent[]> {
  const sent: Sent[] = [];
  for (const [i, d] of draws.entries()) {
    const body = { ...BODIES[d.op]!(d, learned), requestId: `req-${from + i}` };
    const first = await sim.call(d.op, body);
    sent.push({ op: d.op, body, first });
    if (first.ok) learn(d.op, body, first.reply, learned);
    sim.clock.advance(d.y * 20);
  }
  return sent;
}

function learn(op: string, body: Record<string, unknown>, reply: unknown, learned: Learned): void {
  const r = reply as { lease?: { etag?: string; id?: string }; session?: { id?: string } };
  if ((op === "lock.acquire" || op === "lock.renew") && r.lease?.etag !== undefined) learned.etags.set(body.name as string, r.lease.etag);
  if (op === "proxy.acquire" && r.lease?.id !== undefined) learned.leases.push(r.lease.id);
  if (op === "session.open" && r.session?.id !== undefined) learned.sessions.push(r.session.id);
}

/** The requestIds the stream holds an event for. */
function recordedRequests(log: MemoryEventLog): Set<string> {
  const ids = new Set<string>();
  for (const m of log.messages) {
    const entry = decodeEvent(m.payload, m.seq);
    if (!isUnparsable(entry) && entry.event.requestId !== undefined) ids.add(entry.event.requestId);
  }
  return ids;
}

/** A copy of `log` (a retry that is decided again appends, and each start must see the same stream). */
async function copyOf(log: MemoryEventLog, now: () => number): Promise<MemoryEventLog> {
  const copy = new MemoryEventLog({ now, dedupWindowMs: SETTINGS.dedupWindowMs });
  for (const m of log.messages)
    await copy.append(m.subject, m.payload, { expectedLastSubjectSeq: await copy.lastSubjectSeq(m.subject), msgId: m.msgId! });
  return copy;
}

function copyOfStore(store: MemoryProjectionSnapshotStore): MemoryProjectionSnapshotStore {
  const copy = new MemoryProjectionSnapshotStore();
  for (const [name, bytes] of store.saved) copy.saved.set(name, bytes);
  return copy;
}

/** Starts a service over `log` (and `snapshots`), sends every recorded request again, and expects its first answer. */
async function expectRetriesAnswered(
  sent: readonly Sent[],
  recorded: ReadonlySet<string>,
  log: MemoryEventLog,
  clock: SimService["clock"],
  snapshots?: MemoryProjectionSnapshotStore,
): Promise<void> {
  const sim = await startSimService(SETTINGS, clock, { log: await copyOf(log, () => clock.now()), snapshots });
  try {
    // A start from snapshots reads them (a store is empty only when no kind had anything to save).
    if (snapshots !== undefined && snapshots.saved.size > 0) expect(snapshots.loadsFound).toBeGreaterThan(0);
    for (const s of sent) {
      if (!s.first.ok || !recorded.has(s.body.requestId as string)) continue;
      expect({ op: s.op, body: s.body, answer: await sim.call(s.op, s.body) }).toEqual({ op: s.op, body: s.body, answer: s.first });
    }
  } finally {
    await sim.stop();
  }
}

describe("a retry after a restart", () => {
  it("is answered as the request first was, for every op, on the stream and from snapshots", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(draw, { minLength: 1, maxLength: 40 }), fc.array(draw, { maxLength: 40 }), async (before, after) => {
        const learned: Learned = { etags: new Map(), leases: [], sessions: [] };
        const store = new MemoryProjectionSnapshotStore();
        const first = await startSimService(SETTINGS, undefined, { snapshots: store });
        const { clock, log } = first;
        const sent = await run(first, before, 0, learned);
        await first.stop(); // saves the snapshots
        const atStop = copyOfStore(store);

        // A second life, from those snapshots, writes more; it stops and saves again.
        const second = await startSimService(SETTINGS, clock, { log, snapshots: store });
        sent.push(...(await run(second, after, before.length, learned)));
        await second.stop();

        const recorded = recordedRequests(log);
        await expectRetriesAnswered(sent, recorded, log, clock);
        await expectRetriesAnswered(sent, recorded, log, clock, atStop);
        await expectRetriesAnswered(sent, recorded, log, clock, copyOfStore(store));
      }),
      {
        numRuns: 40,
        examples: [
          // A report's retry after its lease was released: answered where its reply is remembered, not UNKNOWN_LEASE.
          [
            [
              { op: "proxy.register", x: 21, y: 6 },
              { op: "proxy.acquire", x: 0, y: 7 },
              { op: "lock.acquire", x: 0, y: 0 },
            ],
            [
              { op: "proxy.report", x: 0, y: 1 },
              { op: "proxy.release", x: 0, y: 0 },
            ],
          ],
        ],
      },
    );
  });
});
