/**
 * Records the histories of test/histories (`npm run histories:record`): a
 * seeded workload through the real service in memory, split by kind, each
 * message with the state and reply today's fold gives it, plus one message
 * per kind that does not parse. Run it after bumping a kind's fold version;
 * review the diff (it is what the new fold means) and commit it.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ACTOR_KINDS, type ActorKind } from "../../src/contract/subjects.ts";
import { startSimService, type SimService } from "../tools/support/sim-service.ts";
import { simulateWorkload } from "../tools/support/workload.ts";
import { HISTORIES_DIR, logicOf, replay, type FoldSettings, type HistoryHeader, type HistoryLine } from "./histories.ts";

const EVENTS = 600;
const SEED = 11;

const sim = await simulateWorkload({ events: EVENTS, seed: SEED });
writeHistories(sim, `workload-seed-${SEED}`);
await sim.stop();
const queue = await lockQueueScenario();
writeHistories(queue, "lock-queue", ["lock"]);
await queue.stop();
const sessions = await sessionScenario();
writeHistories(sessions, "sessions", ["session", "lock"]);
await sessions.stop();

/**
 * Sessions (1.2), which the random workload does not use: locks taken under
 * a session, kept alive, a waiter granted when the session closes (its lock
 * event records the session's end), and a refused keepalive of the ended one.
 */
async function sessionScenario(): Promise<SimService> {
  const q = await startSimService({ lockTtlMs: 10_000, maxTtlMs: 30_000 });
  const opened = await q.call("session.open", { owner: "w", requestId: "open-w" });
  if (!opened.ok) throw new Error(`session.open refused: ${opened.rejection.message}`);
  const id = (opened.reply as { session: { id: string } }).session.id;
  for (const name of ["s/1", "s/2"]) await q.call("lock.acquire", { name, owner: "w", session: id });
  await q.call("session.keepalive", { id });
  const waiting = q.call("lock.acquire", { name: "s/1", owner: "v", ttlMs: 5000, waitMs: 20_000, requestId: "wait-v" });
  while (!q.log.messages.some((m) => m.subject.endsWith("s~2F1") && new TextDecoder().decode(m.payload).includes("LockWaiterQueued"))) await pause();
  await q.call("session.close", { id });
  await waiting;
  await q.call("session.keepalive", { id });
  await q.call("lock.acquire", { name: "s/2", owner: "x", ttlMs: 5000 });
  return q;
}

/**
 * A lock's wait queue, which the random workload does not use: a holder,
 * three waiters (each granted in turn as the one before releases) and an
 * acquire without a place refused meanwhile.
 */
async function lockQueueScenario(): Promise<SimService> {
  const q = await startSimService({ lockTtlMs: 10_000, maxTtlMs: 30_000 });
  const reply = async (body: Record<string, unknown>, op = "acquire") => {
    const r = await q.call(`lock.${op}`, { name: "queue/1", ...body });
    return r.ok ? (r.reply as { lease?: { etag: string } }) : {};
  };
  let held = await reply({ owner: "a" });
  const waiting = ["b", "c", "d"].map((owner, i) => reply({ owner, waitMs: 20_000, requestId: `wait-${owner}-${i}` }));
  // Wait until all three joined the queue, then refuse one without a place.
  while (q.log.messages.filter((m) => m.subject.endsWith("queue/1") || m.subject.includes("queue")).length < 4) await pause();
  await q.call("lock.acquire", { name: "queue/1", owner: "e" });
  for (const next of waiting) {
    await reply({ etag: held.lease!.etag }, "release");
    held = await next;
  }
  await reply({ etag: held.lease!.etag }, "release");
  return q;
}

function pause(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 5));
}

function writeHistories(sim: SimService, name: string, kinds: readonly ActorKind[] = ACTOR_KINDS): void {
const c = sim.config;
const settings: FoldSettings = {
  lockTtlMs: c.lockTtlMs,
  maxTtlMs: c.maxTtlMs,
  cooldownMs: c.cooldownMs,
  cooldownBackoff: c.cooldownBackoff,
  maxCooldownMs: c.maxCooldownMs,
  routeIdleMs: c.routeIdleMs,
};
const decoder = new TextDecoder();
for (const kind of kinds) {
  const prefix = `${sim.subjects.prefix}.events.${kind}.`;
  const stored = sim.log.messages.filter((m) => m.subject.startsWith(prefix));
  // A kind the scenario does not use has no history to keep (the workload opens no session).
  if (stored.length === 0) continue;
  const messages = stored.map((m) => ({ seq: m.seq, subject: m.subject, payload: decoder.decode(m.payload) }));
  // A message that does not parse, on the subject of the kind's first id: what the fold makes of it is part of its meaning.
  const last = sim.log.messages.length;
  if (stored[0] !== undefined) messages.push({ seq: last + 1 + ACTOR_KINDS.indexOf(kind), subject: stored[0].subject, payload: "{not json" });
  const header: HistoryHeader = { kind, foldVersion: logicOf(kind, settings).foldVersion, settings, recordedBy: "npm run histories:record" };
  const expected = replay(header, messages.map((m) => ({ ...m, state: null })));
  const lines: HistoryLine[] = messages.map((m, i) => ({ ...m, ...expected[i]! }));
  const dir = join(HISTORIES_DIR, kind);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.jsonl`);
  writeFileSync(path, [header, ...lines].map((l) => JSON.stringify(l)).join("\n") + "\n");
  console.log(`${path}: ${lines.length} messages (${kindSummary(kind, lines)})`);
}
}

function kindSummary(kind: ActorKind, lines: readonly HistoryLine[]): string {
  const types = new Map<string, number>();
  for (const l of lines) {
    const type = /"type":"([A-Za-z]+)"/.exec(l.payload)?.[1] ?? "unparsable";
    types.set(type, (types.get(type) ?? 0) + 1);
  }
  return `${kind}: ${[...types].map(([t, n]) => `${t} ${n}`).join(", ")}`;
}
