/** Aligned plain-text tables for the operator tools' human output. */

/**
 * A name as a table cell: as is when plain, else {@link quoted}. Ids are
 * exact, so two that differ only by what a terminal shows as nothing (a
 * zero-width space, a byte-order mark), by normalization, or by a
 * right-to-left override must print differently: a name holding a space, a
 * quote, any control, format, unassigned or private-use code point, or not
 * in NFC, is quoted; so is one holding `,` or `=`, which the tools' lists and
 * label pairs join with (a lock `x,y` is not the locks `x` and `y`).
 */
export function cell(name: string): string {
  return name === "" || /[\s"\p{C},=]/u.test(name) || name.normalize("NFC") !== name ? quoted(name) : name;
}

/** `name` as a JSON string whose every invisible code point is a `\uXXXX` escape (combining marks too when `name` is not in NFC). */
export function quoted(name: string): string {
  const hidden = name.normalize("NFC") === name ? /[\p{C}\p{Z}]/gu : /[\p{C}\p{Z}\p{M}]/gu;
  return JSON.stringify(name).replace(hidden, (c) => (c === " " ? c : escapeUnits(c)));
}

/**
 * `text` as a terminal may be given it: every control and format code point
 * (line breaks, ESC, C1 controls such as CSI, bidi overrides, zero-width
 * characters) as a `\uXXXX` escape, the rest as it is. A client's ids,
 * owners and labels reach an operator's terminal in log lines, errors and
 * JSON output; raw, an ESC or a C1 CSI there is a command to the terminal
 * (clear the screen, set its title, recolour).
 */
export function visible(text: string): string {
  return text.replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, escapeUnits);
}

/**
 * JSON text (as `JSON.stringify` writes it, indented or not) with what
 * {@link visible} escapes escaped inside its strings: the same JSON, the
 * same values. Its line breaks and tabs are its layout (a string holds none
 * raw), so they stay.
 */
export function visibleJson(json: string): string {
  return json.replace(/(?![\n\r\t])[\p{Cc}\p{Cf}\u2028\u2029]/gu, escapeUnits);
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
