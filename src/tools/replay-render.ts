/**
 * `leasehold replay`'s text: the replay view (src/tools/replay.ts) as aligned
 * tables, one section per kind, and the labels cell `status` shares.
 */
import { compareCodeUnits } from "../contract/code-units.ts";
import type { ReplayView } from "./replay.ts";
import { cell, renderTable } from "./table.ts";
import { formatDuration } from "./time.ts";

const yesNo = (b: boolean) => (b ? "yes" : "no");

/** A holder's cell: its name, and the principal behind it when one is known (`worker-a (clients/alice)`). */
export function holderCell(name: string, by: string | undefined): string {
  return by === undefined || by === "" ? cell(name) : `${cell(name)} (${cell(by)})`;
}

/** The replay view as aligned tables, one section per kind shown. */
export function renderReplay(view: ReplayView, streamName: string): string[] {
  const at = Date.parse(view.at);
  const left = (instant: string) => formatDuration(Date.parse(instant) - at);
  const lines = [`state of ${streamName} at ${view.at} (through sequence ${view.seq}, ${view.messages} messages folded)`];
  if (view.proxies !== undefined) {
    lines.push(
      "",
      ...renderTable(
        `PROXIES (${view.proxies.length})`,
        ["PROXY", "ACTIVE", "MAX", "LATENCY", "HEALTHY", "LABELS", "COOLDOWNS"],
        view.proxies.map((p) => [
          cell(p.proxy),
          String(p.active),
          String(p.maxLeases),
          `${p.latencyMs}ms`,
          yesNo(p.healthy),
          labelsText(p.labels),
          p.cooldowns.map((c) => `${c.target === "" ? "(global)" : cell(c.target)} until ${c.untilAt} (${left(c.untilAt)})`).join(", ") ||
            "-",
        ]),
      ),
    );
  }
  if (view.proxyLeases !== undefined) {
    lines.push(
      "",
      ...renderTable(
        `PROXY LEASES (${view.proxyLeases.length} active)`,
        ["PROXY", "LEASE", "TARGET", "EXPIRES", "LEFT"],
        view.proxyLeases.map((l) => [
          cell(l.proxy),
          holderCell(l.id, l.by),
          l.target === "" ? "-" : cell(l.target),
          l.expiresAt,
          left(l.expiresAt),
        ]),
      ),
    );
  }
  if (view.hosts !== undefined) {
    lines.push(
      "",
      ...renderTable(
        `HOSTS (${view.hosts.length})`,
        ["HOST", "HEALTHY", "DRAINING", "ACTIVE", "MAX"],
        view.hosts.map((h) => [
          cell(h.host),
          yesNo(h.healthy),
          yesNo(h.draining),
          // A full host (active at or over its cap) is marked: the chooser skips it.
          h.maxLeases !== null && h.active >= h.maxLeases ? `${h.active} (full)` : String(h.active),
          h.maxLeases === null ? "-" : String(h.maxLeases),
        ]),
      ),
    );
  }
  if (view.routes !== undefined) {
    lines.push(
      "",
      ...renderTable(
        `ROUTES (${view.routes.length})`,
        ["ROUTE", "PINNED", "LEASES", "SEEN"],
        view.routes.map((r) => [
          cell(r.route),
          r.pinned === "" ? "-" : cell(r.pinned),
          String(r.leases.length),
          r.seen.map(cell).join(",") || "-",
        ]),
      ),
      "",
      ...renderTable(
        `ROUTE LEASES (${view.routes.reduce((n, r) => n + r.leases.length, 0)})`,
        ["ROUTE", "FP", "MODEL", "HOST", "CREATED", "LAST USED"],
        view.routes.flatMap((r) =>
          r.leases.map((l) => [cell(r.route), cell(l.fp), cell(l.model), cell(l.host), l.createdAt, l.lastUsedAt]),
        ),
      ),
    );
  }
  if (view.locks !== undefined) {
    lines.push(
      "",
      ...renderTable(
        `LOCKS (${view.locks.length})`,
        ["LOCK", "STATE", "OWNER", "GENERATION", "ETAG", "EXPIRES", "LEFT", "WAITERS"],
        view.locks.map((l) => {
          const r = l.recorded;
          return [
            cell(l.name),
            l.state,
            r === null ? "-" : holderCell(r.owner, l.by),
            String(l.generation),
            r === null ? "-" : r.etag,
            r === null ? "-" : r.expiresAt,
            r === null ? "-" : left(r.expiresAt),
            String(l.waiters),
          ];
        }),
      ),
    );
    for (const l of view.locks) if (l.corrupt !== null) lines.push(`  ! ${cell(l.name)} is corrupt: ${l.corrupt}`);
  }
  if (view.sessions !== undefined) {
    lines.push(
      "",
      ...renderTable(
        `SESSIONS (${view.sessions.length})`,
        ["SESSION", "STATE", "OWNER", "TTL", "EXPIRES", "CLOSED", "LOCKS"],
        view.sessions.map((s) => [
          cell(s.id),
          s.state,
          holderCell(s.owner, s.by),
          `${s.ttlMs}ms`,
          s.expiresAt,
          s.closedAt ?? "-",
          s.locks.map(cell).join(",") || "-",
        ]),
      ),
    );
  }
  return lines;
}

/** Labels as `k=v,k=v` (sorted), `-` when none. */
export function labelsText(labels: Readonly<Record<string, string>>): string {
  const entries = Object.entries(labels).sort(([a], [b]) => compareCodeUnits(a, b));
  return entries.length === 0 ? "-" : entries.map(([k, v]) => `${cell(k)}=${cell(v)}`).join(",");
}
