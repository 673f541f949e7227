/**
 * The dashboard page: one HTML document, one stylesheet and one plain ES
 * module, served as they are (no build step). The module listens to
 * `/api/stream` (server-sent events, each a whole view), counts time left
 * down every second against the server's clock, and filters rows by the
 * text in the filter box; heartbeat events (keepalives, renewals) are hidden
 * unless the box beside the events asks for them. The principal behind a
 * lease, session or event (who NATS says sent the request) is a muted
 * `by <principal>` line under its holder or type, when one is known. Every
 * name is written with `textContent`, so an id holding markup is shown, never run,
 * and quoted with its invisible code points escaped where it could pass for another.
 */

/** The document at `/`. */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>leasehold</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/dashboard.css">
<script type="module" src="/dashboard.js"></script>
</head>
<body>
<header>
  <h1>leasehold</h1>
  <span id="status" class="badge warn">connecting…</span>
  <span id="position" class="muted"></span>
  <input id="filter" type="search" placeholder="Filter by name, owner, host, type…" aria-label="Filter" autocomplete="off">
</header>
<main>
  <section id="locks-section">
    <h2>Locks <span class="count" id="locks-count"></span></h2>
    <div class="scroll"><table id="locks"><thead><tr><th>Name</th><th>Holder</th><th>Gen</th><th>Time left</th><th>Waiting</th><th>Session</th></tr></thead><tbody></tbody></table></div>
  </section>
  <section id="sessions-section">
    <h2>Sessions <span class="count" id="sessions-count"></span></h2>
    <div class="scroll"><table id="sessions"><thead><tr><th>Session</th><th>Owner</th><th>Time left</th><th>Locks</th></tr></thead><tbody></tbody></table></div>
  </section>
  <section id="proxies-section">
    <h2>Proxies <span class="count" id="proxies-count"></span></h2>
    <div class="scroll"><table id="proxies"><thead><tr><th>Proxy</th><th>Load</th><th>Latency</th><th>Labels</th><th>Health</th><th>Cooldowns</th></tr></thead><tbody></tbody></table></div>
  </section>
  <section id="hosts-section">
    <h2>Hosts <span class="count" id="hosts-count"></span></h2>
    <div class="scroll"><table id="hosts"><thead><tr><th>Host</th><th>Health</th><th>Load</th><th>Route leases</th></tr></thead><tbody></tbody></table></div>
  </section>
  <section id="events-section">
    <h2>Latest events <span class="count" id="events-count"></span>
      <label class="muted toggle"><input id="heartbeats" type="checkbox"> show keepalives and renewals</label></h2>
    <div class="scroll"><table id="events"><thead><tr><th>Seq</th><th>At</th><th>Event</th><th>Data</th></tr></thead><tbody></tbody></table></div>
  </section>
</main>
</body>
</html>
`;

/** The stylesheet: two columns from 1000 px, one on a phone. */
export const DASHBOARD_CSS = `:root { color-scheme: light dark; --bg: #f7f7f5; --card: #fff; --fg: #1d1d1f; --muted: #6b6b70; --line: #e2e2e0;
  --ok: #1f7a3a; --warn: #a15c00; --bad: #b3261e; --bar: #3b6fd6; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; }
@media (prefers-color-scheme: dark) { :root { --bg: #16171a; --card: #1f2125; --fg: #ececef; --muted: #9a9aa3; --line: #33353b; --ok: #5ccf7e; --warn: #f0b44c; --bad: #ff7a70; --bar: #6f9bff; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); }
header { position: sticky; top: 0; z-index: 1; display: flex; flex-wrap: wrap; gap: 8px 12px; align-items: center; padding: 10px 16px;
  background: var(--card); border-bottom: 1px solid var(--line); }
h1 { font-size: 18px; margin: 0; }
h2 { font-size: 15px; margin: 0 0 8px; }
#filter { flex: 1 1 220px; min-width: 0; font: inherit; padding: 6px 10px; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
main { display: grid; grid-template-columns: 1fr; gap: 12px; padding: 12px; }
@media (min-width: 1000px) { main { grid-template-columns: 1fr 1fr; } }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; min-width: 0; }
.scroll { overflow-x: auto; max-height: 60vh; overflow-y: auto; }
table { width: 100%; border-collapse: collapse; }
th, td { text-align: left; padding: 4px 8px 4px 0; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; font-size: 12px; position: sticky; top: 0; background: var(--card); }
td.name, .actor { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; overflow-wrap: anywhere; }
.actor { display: block; color: var(--muted); font-size: 12px; }
.principal { white-space: normal; }
td.num { font-variant-numeric: tabular-nums; white-space: nowrap; }
.muted, .count { color: var(--muted); font-weight: normal; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; border: 1px solid currentColor; white-space: nowrap; }
.ok { color: var(--ok); } .warn { color: var(--warn); } .bad { color: var(--bad); }
.bar { display: inline-block; width: 70px; height: 8px; border-radius: 4px; background: var(--line); vertical-align: middle; margin-right: 6px; overflow: hidden; }
.bar > span { display: block; height: 100%; background: var(--bar); }
.bar.full > span { background: var(--bad); }
.empty td { color: var(--muted); font-style: italic; }
ul.leases { margin: 0; padding-left: 16px; }
#proxies td.name { white-space: nowrap; }
.toggle { font-size: 12px; margin-left: 8px; white-space: nowrap; }
.label { display: inline-block; margin: 0 4px 2px 0; padding: 0 6px; border-radius: 4px; background: var(--line); font-size: 12px; overflow-wrap: anywhere; }
@media (max-width: 600px) { main { padding: 8px; gap: 8px; } header { padding: 8px; } td, th { font-size: 13px; } }
`;

/** The module: renders views from the server-sent event stream. */
export const DASHBOARD_JS = `const $ = (id) => document.getElementById(id);
let view = null;
let offset = 0; // server clock minus this clock

// Ids are exact: one that differs from another only by what shows as nothing (a zero-width space, a BOM,
// a space at an end), by normalization or by a bidi override is shown quoted, those code points escaped.
const UNSHOWN = /(?! )[\\p{C}\\p{Z}]|^ | $|"/u;
function shown(name) {
  const nfc = name.normalize("NFC") === name;
  if (name !== "" && nfc && !UNSHOWN.test(name)) return name;
  const escape = (c) => Array.from({ length: c.length }, (_, i) => "\\\\u" + c.charCodeAt(i).toString(16).padStart(4, "0")).join("");
  return JSON.stringify(name).replace(nfc ? /(?! )[\\p{C}\\p{Z}]/gu : /(?! )[\\p{C}\\p{Z}\\p{M}]/gu, escape);
}
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = cls === "name" ? shown(String(text)) : String(text);
  if (cls) e.className = cls;
  return e;
}
function left(ms) {
  if (ms <= 0) return "expired";
  const s = ms / 1000;
  if (s < 60) return s.toFixed(1) + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + "m " + Math.floor(s % 60) + "s";
  return Math.floor(m / 60) + "h " + (m % 60) + "m";
}
function matches(words, needle) { return needle === "" || words.join(" ").toLowerCase().includes(needle); }
function fill(table, rows, empty, cols) {
  const body = table.tBodies[0];
  body.replaceChildren(...rows);
  if (rows.length === 0) { const tr = el("tr", undefined, "empty"); const td = el("td", empty); td.colSpan = cols; tr.append(td); body.append(tr); }
}
// The first items of a list in a row, and how many more there are (the view carries at most eight of them).
function capped(texts, total) {
  const ul = el("ul", undefined, "leases");
  for (const text of texts.slice(0, 8)) ul.append(el("li", text));
  if (total > 8) ul.append(el("li", "… " + (total - 8) + " more", "muted"));
  return ul;
}
// Heartbeats: a session's keepalive and a lock's renewal say only "still here"; hidden unless asked for.
const HEARTBEATS = new Set(["SessionKeptAlive", "LockRenewed"]);
// The principal behind a holder or event, a muted line under it; nothing when unknown.
function byLine(by) { return el("span", "by " + by, "actor principal"); }
function withBy(td, by) { if (by) td.append(byLine(by)); return td; }
function counted(id, shown, total) { $(id).textContent = shown === total ? "(" + total + ")" : "(" + shown + " of " + total + ")"; }

function render() {
  if (view === null) return;
  const now = Date.now() + offset;
  const needle = $("filter").value.trim().toLowerCase();

  const locks = view.locks.filter((l) => l.corrupt !== null || l.expiresAtMs > now).filter((l) => matches([l.name, l.owner, l.by ?? "", "gen " + l.generation], needle));
  fill($("locks"), locks.map((l) => {
    const tr = el("tr"); tr.dataset.name = l.name;
    tr.append(el("td", l.name, "name"), withBy(el("td", l.owner, "name"), l.by), el("td", l.generation, "num"));
    tr.append(l.corrupt !== null ? el("td", "CORRUPT: " + l.corrupt, "bad") : el("td", left(l.expiresAtMs - now), "num"));
    tr.append(el("td", l.waiters, "num"), l.session ? el("td", l.session, "name") : el("td", "—", "muted"));
    return tr;
  }), needle ? "no lock matches the filter" : "no lock is held", 6);
  counted("locks-count", locks.length, view.totals.locks);

  const sessions = view.sessions.filter((s) => s.expiresAtMs > now).filter((s) => matches([s.id, s.owner, s.by ?? "", ...s.locks], needle));
  fill($("sessions"), sessions.map((s) => {
    const tr = el("tr"); tr.dataset.name = s.id;
    const held = el("td");
    held.append(el("div", s.lockCount + (s.lockCount === 1 ? " lock" : " locks"), "muted"));
    if (s.lockCount > 0) held.append(capped(s.locks.map(shown), s.lockCount));
    tr.append(el("td", s.id, "name"), withBy(el("td", s.owner, "name"), s.by), el("td", left(s.expiresAtMs - now), "num"), held);
    return tr;
  }), needle ? "no session matches the filter" : "no session is open", 4);
  counted("sessions-count", sessions.length, view.totals.sessions);

  const labelTexts = (p) => Object.entries(p.labels ?? {}).map(([k, v]) => k + "=" + v);
  const holderTexts = (p) => p.holders.map((h) => shown(h.by) + (h.leases > 1 ? " ×" + h.leases : ""));
  const proxies = view.proxies.filter((p) => matches([p.proxy, ...labelTexts(p), ...p.holders.map((h) => h.by), ...p.cooldowns.map((c) => c.target)], needle));
  fill($("proxies"), proxies.map((p) => {
    const tr = el("tr"); tr.dataset.name = p.proxy;
    const load = el("td", undefined, "num");
    const bar = el("span", undefined, "bar" + (p.active >= p.maxLeases ? " full" : ""));
    const fillBar = el("span"); fillBar.style.width = (p.maxLeases > 0 ? Math.min(100, (100 * p.active) / p.maxLeases) : 100) + "%";
    bar.append(fillBar); load.append(bar, document.createTextNode(p.active + " / " + p.maxLeases));
    // Who holds its leases: at most three principals named, the rest counted.
    const holders = holderTexts(p);
    if (holders.length > 0) load.append(byLine(holders.slice(0, 3).join(", ") + (holders.length > 3 ? " … " + (holders.length - 3) + " more" : "")));
    const cds = p.cooldowns.filter((c) => c.untilMs > now).map((c) => (c.target === "" ? "all targets" : shown(c.target)) + ": " + left(c.untilMs - now));
    const latency = typeof p.latencyMs === "number" ? el("td", p.latencyMs + " ms", "num") : el("td", "—", "muted");
    const labels = el("td");
    for (const [k, v] of Object.entries(p.labels ?? {})) labels.append(el("span", shown(k) + "=" + shown(v), "label"));
    if (labels.childNodes.length === 0) labels.append(el("span", "—", "muted"));
    tr.append(el("td", p.proxy, "name"), load, latency, labels, el("td", p.healthy ? "healthy" : "unhealthy", p.healthy ? "ok" : "bad"), el("td", cds.join(", ") || "—", cds.length ? "warn" : "muted"));
    return tr;
  }), needle ? "no proxy matches the filter" : "no proxy registered", 6);
  counted("proxies-count", proxies.length, view.totals.proxies);

  const hosts = view.hosts.filter((h) => matches([h.host, ...h.leases.map((l) => l.route + " " + l.fp + " " + l.model)], needle));
  fill($("hosts"), hosts.map((h) => {
    const tr = el("tr"); tr.dataset.name = h.host;
    const health = el("td");
    health.append(el("span", !h.known ? "never set" : h.healthy ? "healthy" : "unhealthy", "badge " + (h.healthy ? "ok" : "bad")));
    if (h.draining) health.append(document.createTextNode(" "), el("span", "draining", "badge warn"));
    const leases = el("td");
    const cap = h.maxLeases === null || h.maxLeases === undefined ? "" : " of " + h.maxLeases + " max";
    leases.append(el("div", h.leaseCount + (h.leaseCount === 1 ? " lease" : " leases") + cap, "muted"));
    if (h.maxLeases !== null && h.maxLeases !== undefined && h.leaseCount >= h.maxLeases) leases.append(el("span", "full", "badge warn"));
    if (h.leaseCount > 0) leases.append(capped(h.leases.map((l) => shown(l.route) + (l.fp ? " · " + shown(l.fp) : "") + (l.model ? " · " + shown(l.model) : "")), h.leaseCount));
    const load = h.load === null || h.load === undefined ? el("td", "—", "muted") : el("td", String(h.load));
    tr.append(el("td", h.host, "name"), health, load, leases);
    return tr;
  }), needle ? "no host matches the filter" : "no host set", 4);
  counted("hosts-count", hosts.length, view.totals.hosts);

  const heartbeats = $("heartbeats").checked;
  const events = view.events.filter((e) => (heartbeats || !HEARTBEATS.has(e.type)) && matches([e.type, e.kind, e.id, e.by ?? "", e.detail], needle));
  fill($("events"), events.map((e) => {
    const tr = el("tr");
    const what = el("td", e.type);
    what.append(el("span", e.kind + " " + shown(e.id), "actor"));
    withBy(what, e.by);
    tr.append(el("td", e.seq, "num"), el("td", e.at.slice(11, 23), "num"), what, el("td", e.detail, "muted"));
    return tr;
  }), view.events.length > 0 ? "only keepalives and renewals (tick the box to see them)" : "no events yet", 4);
  counted("events-count", events.length, view.events.length);

  $("position").textContent = "stream seq " + view.seq + (view.caughtUp ? "" : " (catching up to " + view.lastSeq + ")");
}

function connect() {
  const source = new EventSource("/api/stream");
  source.addEventListener("view", (m) => {
    view = JSON.parse(m.data);
    offset = view.nowMs - Date.now();
    $("status").textContent = "live"; $("status").className = "badge ok";
    render();
  });
  source.addEventListener("error", () => { $("status").textContent = "reconnecting…"; $("status").className = "badge warn"; });
}

$("filter").addEventListener("input", render);
$("heartbeats").addEventListener("change", render);
setInterval(render, 1000);
connect();
`;

/** The tab icon at `/favicon.svg` (and `/favicon.ico`, where browsers look without a link): a lock on the accent colour. */
export const DASHBOARD_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#3b6fd6"/><path d="M11 14v-3a5 5 0 0 1 10 0v3" fill="none" stroke="#fff" stroke-width="3"/><rect x="8" y="14" width="16" height="12" rx="2" fill="#fff"/></svg>
`;
