/**
 * What one kind's audit rules are to the audit (src/tools/audit.ts): the
 * rules' ids with what each forbids, and a checker that sees every event of
 * that kind against its actor's state before the event. A kind's rules live
 * in one module of this folder; the audit lists the modules.
 */
import type { ActorKind } from "../../contract/subjects.ts";
import type { EventEnvelope, HistoryEntry } from "../../events/envelope.ts";
import type { StreamFold } from "../stream-fold.ts";
import { cell } from "../table.ts";

/** A host's admission of a new route lease that no placement has used yet. */
export interface OpenAdmission {
  readonly host: string;
  readonly route: string;
  readonly fp: string;
  readonly model: string;
  readonly routeSeq: number;
}

/** What every kind's checker may read (and the placement kinds share) while the stream is audited. */
export interface AuditScope {
  /** The stream folded so far, the message being checked included (its checker is given its actor's state before it). */
  readonly fold: StreamFold;
  /** How long an expired proxy lease still resolves for report (the service's --cooldown-ms). */
  readonly cooldownMs: number;
  /** The service's --max-ttl-ms. */
  readonly maxTtlMs: number;
  /** Active route leases per host, all routes, as of the message being checked (kept by the route rules). */
  readonly activeOnHost: Map<string, number>;
  /** Host admissions not yet used by a placement, by stream sequence (written by the host rules, used by the route rules). */
  readonly admissions: Map<number, OpenAdmission>;
}

/** Where an event stands: its instant (epoch ms) and its stream sequence. */
export interface EventPlace {
  readonly atMs: number;
  readonly seq: number;
}

/** Tells the audit of one broken rule, in words. */
export type Report<R extends string> = (rule: R, message: string) => void;

/** One kind's checker over one audit. */
export interface KindChecker<R extends string> {
  /** Checks an event whose envelope fits its subject against the state of its actor `id` before it (a state of this kind). */
  check(event: EventEnvelope, id: string, before: unknown, place: EventPlace, report: Report<R>): void;
  /** Told after the fold applied any message on this kind's subjects, with the actor's state before and after it. */
  folded?(id: string, before: unknown, after: unknown, entry: HistoryEntry): void;
}

/** One kind's rules: their ids with what each forbids, and how to check them. */
export interface KindRules<R extends string> {
  readonly kind: ActorKind;
  readonly rules: Readonly<Record<R, string>>;
  checker(scope: AuditScope): KindChecker<R>;
}

/** A route's conversation key, as findings name it. */
export function keyText(route: string, fp: string, model: string): string {
  return `key (${cell(route)}, ${JSON.stringify(fp)}, ${JSON.stringify(model)})`;
}
