/** Aligned plain-text tables for the operator tools' human output. */

/**
 * A name as a table cell: as is when plain, else {@link quoted}. Ids are
 * exact, so two that differ only by what a terminal shows as nothing (a
 * zero-width space, a byte-order mark), by normalization, or by a
 * right-to-left override must print differently: a name holding a space, a
 * quote, any control, format, unassigned or private-use code point, or not
 * in NFC, is quoted.
 */
export function cell(name: string): string {
  return name === "" || /[\s"\p{C}]/u.test(name) || name.normalize("NFC") !== name ? quoted(name) : name;
}

/** `name` as a JSON string whose every invisible code point is a `\uXXXX` escape (combining marks too when `name` is not in NFC). */
export function quoted(name: string): string {
  const hidden = name.normalize("NFC") === name ? /[\p{C}\p{Z}]/gu : /[\p{C}\p{Z}\p{M}]/gu;
  return JSON.stringify(name).replace(hidden, (c) => (c === " " ? c : escapeUnits(c)));
}

function escapeUnits(c: string): string {
  let out = "";
  for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`;
  return out;
}

/**
 * Renders a titled table: a header row and one line per row, each column as
 * wide as its widest cell (two spaces between columns, numbers right-aligned).
 * An empty table is its title and `(none)`.
 */
export function renderTable(title: string, headers: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const lines = [title];
  if (rows.length === 0) return [...lines, "  (none)"];
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const numeric = headers.map((_, i) => rows.every((r) => /^-?\d+(\.\d+)?$/.test(r[i] ?? "") || (r[i] ?? "") === ""));
  const line = (cells: readonly string[]) =>
    "  " +
    cells
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  lines.push(line(headers));
  for (const r of rows) lines.push(line(r));
  return lines;
}
