/**
 * Recorded histories (Temporal's replay tests, for folds): a stream as the
 * service wrote it, one kind per file (`test/histories/<kind>/*.jsonl`), with
 * what each event must fold to — the id's state right after it and the reply
 * owed to the command that recorded it (what a retry by requestId gets).
 *
 * Line 1 is a header: the kind, the fold version it was recorded with, and
 * the settings of the fold. Every other line is one message: its stream
 * sequence, subject and payload as stored, and the expected state and reply.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { KindLogic, Command } from "../../src/actors/kind-logic.ts";
import { hostLogic } from "../../src/host/logic.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import { proxyLogic } from "../../src/proxy/logic.ts";
import { chooserNamed } from "../../src/route/chooser.ts";
import { routeLogic } from "../../src/route/logic.ts";
import { sessionLogic } from "../../src/session/logic.ts";
import type { ServiceConfig } from "../../src/config.ts";
import { isUnparsable } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import { type ActorKind } from "../../src/contract/subjects.ts";
import { decodeToken } from "../../src/contract/subjects.ts";
import { LeaseMap } from "../../src/route/lease-map.ts";
import { WaiterQueue } from "../../src/lock/waiter-queue.ts";

/** The folds' settings a history was recorded with. */
export type FoldSettings = Pick<ServiceConfig, "lockTtlMs" | "maxTtlMs" | "cooldownMs" | "cooldownBackoff" | "maxCooldownMs" | "routeIdleMs">;

/** Line 1 of a history file. */
export interface HistoryHeader {
  readonly kind: ActorKind;
  readonly foldVersion: number;
  readonly settings: FoldSettings;
  readonly recordedBy: string;
}

/** Every other line: one stored message and what it must fold to. */
export interface HistoryLine {
  readonly seq: number;
  readonly subject: string;
  /** The payload as stored (UTF-8 text). */
  readonly payload: string;
  /** The id's state right after this message, in the canonical JSON form of {@link canonical}. */
  readonly state: unknown;
  /** The reply owed to the command that recorded it (absent for a message that does not parse). */
  readonly reply?: unknown;
}

/** The kind's logic, as the service builds it from its settings. */
export function logicOf(kind: ActorKind, s: FoldSettings): KindLogic<unknown, Command> {
  const logic =
    kind === "lock"
      ? lockLogic({ lockTtlMs: s.lockTtlMs, maxTtlMs: s.maxTtlMs })
      : kind === "proxy"
        ? proxyLogic({ cooldownMs: s.cooldownMs, cooldownBackoff: s.cooldownBackoff, maxCooldownMs: s.maxCooldownMs })
        : kind === "host"
          ? hostLogic()
          : kind === "session"
            ? sessionLogic({ lockTtlMs: s.lockTtlMs, maxTtlMs: s.maxTtlMs })
            : routeLogic({ routeIdleMs: s.routeIdleMs, chooser: chooserNamed("least-loaded") });
  return logic;
}

/**
 * A state as plain JSON, the same whatever order maps and sets were filled
 * in: maps become objects (or arrays of entries for non-string keys) with
 * sorted keys, sets sorted arrays, a lock's queue the array of its waiters.
 */
export function canonical(value: unknown): unknown {
  // A route's lease map is a map of leases, however it is stored.
  if (value instanceof LeaseMap) return canonical(new Map(value));
  // A lock's wait queue is its waiters in order, however it is stored.
  if (value instanceof WaiterQueue) return canonical([...value]);
  if (value instanceof Map) {
    const entries = [...value.entries()].map(([k, v]) => [k, canonical(v)] as const);
    if (entries.every(([k]) => typeof k === "string")) {
      return Object.fromEntries(entries.sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1)));
    }
    return entries.map(([k, v]) => [canonical(k), v]);
  }
  if (value instanceof Set) return [...value].map(canonical).sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === "object") {
    const o = value as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(o)
        .sort()
        .filter((k) => o[k] !== undefined)
        .map((k) => [k, canonical(o[k])]),
    );
  }
  return value;
}

/** What replaying `lines` with today's fold gives: the state and reply after each message, per line. */
export function replay(header: HistoryHeader, lines: readonly HistoryLine[]): { state: unknown; reply?: unknown }[] {
  const logic = logicOf(header.kind, header.settings);
  const states = new Map<string, unknown>();
  const encoder = new TextEncoder();
  return lines.map((line) => {
    const id = decodeToken(line.subject.slice(line.subject.lastIndexOf(".") + 1));
    const entry = decodeEvent(encoder.encode(line.payload), line.seq);
    const state = logic.evolve(states.get(id) ?? logic.initialState(id), entry);
    states.set(id, state);
    return isUnparsable(entry) ? { state: canonical(state) } : { state: canonical(state), reply: canonical(logic.replyFor(state, entry)) };
  });
}

/** One recorded history file. */
export interface HistoryFile {
  readonly path: string;
  readonly header: HistoryHeader;
  readonly lines: readonly HistoryLine[];
}

/** The folder of recorded histories. */
export const HISTORIES_DIR = import.meta.dirname;

/** Every recorded history, by kind folder. */
export function readHistories(dir = HISTORIES_DIR): HistoryFile[] {
  const files: HistoryFile[] = [];
  for (const kind of readdirSync(dir, { withFileTypes: true }).filter((d) => d.isDirectory())) {
    for (const name of readdirSync(join(dir, kind.name)).filter((n) => n.endsWith(".jsonl"))) {
      const path = join(dir, kind.name, name);
      const [head, ...rest] = readFileSync(path, "utf8").split("\n").filter((l) => l.length > 0);
      files.push({ path, header: JSON.parse(head!) as HistoryHeader, lines: rest.map((l) => JSON.parse(l) as HistoryLine) });
    }
  }
  return files;
}
