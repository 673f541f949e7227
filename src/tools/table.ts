/** Aligned plain-text tables for the operator tools' human output. */

/** A name as a table cell: as is when plain, JSON-quoted when empty or holding spaces or control characters. */
export function cell(name: string): string {
  return name === "" || /[\s"\p{Cc}]/u.test(name) ? JSON.stringify(name) : name;
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
