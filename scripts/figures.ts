/**
 * Renders the table of current figures into bench/README.md, between its
 * `generated:figures` markers, from bench/results/current.json
 * (`npm run figures`): each figure with its bar and whether it meets it, the
 * tree it was compared against, the command that made it and its output in
 * bench/results/. test/docs/figures.unit.test.ts fails while the README's
 * table differs from this.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { format, resolveConfig } from "prettier";
import { z } from "zod";

/** The file the figures are kept in. */
export const FIGURES_PATH = fileURLToPath(new URL("../bench/results/current.json", import.meta.url));
/** The README the table is rendered into. */
export const README_PATH = fileURLToPath(new URL("../bench/README.md", import.meta.url));

const OPEN = "<!-- generated:figures (npm run figures) -->";
const CLOSE = "<!-- /generated:figures -->";

const Bar = z.strictObject({
  op: z.enum([">=", "<=", "<"]),
  value: z.number(),
  unit: z.string().optional(),
  /** The bar in words, where its number alone would not say it. */
  text: z.string().optional(),
  /** The issue that set it. */
  issue: z.number().int().positive().optional(),
});

const Figure = z.strictObject({
  target: z.string().min(1),
  metric: z.string().min(1),
  /** The figure compared with the bar: the median of the runs unless `stat` says otherwise ("lowest": a bar every run must pass). */
  value: z.number().optional(),
  stat: z.enum(["median", "highest", "lowest"]).optional(),
  digits: z.number().int().min(0).max(3).optional(),
  unit: z.string().optional(),
  low: z.number().optional(),
  high: z.number().optional(),
  runs: z.number().int().positive().optional(),
  /** The figure as shown, where it is more than one number. */
  text: z.string().optional(),
  bar: Bar.optional(),
  /** False where the machine's load made the measurement say nothing about the bar. */
  judged: z.literal(false).optional(),
  reason: z.string().optional(),
  /** The same figure of the tree compared against, measured in the same runs. */
  before: z.string().optional(),
  against: z.string().optional(),
  command: z.string().min(1),
  /** The output in bench/results/ (a file or a folder), or the commit that recorded the figure where no output was kept. */
  results: z.union([z.string(), z.array(z.string()).min(1)]).optional(),
  commit: z.string().optional(),
  date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  /** The heading of bench/README.md that explains why the figure is what it is. */
  why: z.string().optional(),
});

/** One current figure. */
export type Figure = z.infer<typeof Figure>;

const Figures = z.strictObject({ about: z.string(), figures: z.array(Figure).min(1) });

/** The figures kept in `text` (bench/results/current.json), checked. */
export function parseFigures(text: string): Figure[] {
  return Figures.parse(JSON.parse(text)).figures;
}

/** The output files and folders the figures cite, relative to bench/results/. */
export function resultPaths(figures: readonly Figure[]): string[] {
  return figures.flatMap((f) => (f.results === undefined ? [] : typeof f.results === "string" ? [f.results] : f.results));
}

function number(value: number, digits: number, least = digits): string {
  const shown = value.toLocaleString("en-US", { minimumFractionDigits: least, maximumFractionDigits: digits });
  return shown.replace(/^-/, "−");
}

function digitsOf(f: Figure): number {
  return f.digits ?? (f.value !== undefined && Number.isInteger(f.value) && f.value >= 100 ? 0 : 2);
}

/** The figure as the table shows it: value (range), runs. */
export function shownFigure(f: Figure): string {
  const d = digitsOf(f);
  const unit = f.unit ?? "";
  let shown = f.text ?? (f.value === undefined ? "–" : `${number(f.value, d)}${unit}`);
  if (f.text === undefined && f.low !== undefined && f.high !== undefined) shown += ` (${number(f.low, d)}–${number(f.high, d)})`;
  const what = f.stat === "highest" || f.stat === "lowest" ? `the ${f.stat} of ` : "";
  if (f.runs !== undefined) shown += f.runs === 1 ? ", 1 run" : `, ${what}${f.runs} runs`;
  else if (f.stat !== undefined && f.stat !== "median" && f.text === undefined) shown += `, the ${f.stat}`;
  return shown;
}

const SYMBOL = { ">=": "≥", "<=": "≤", "<": "<" } as const;

/** The bar as the table shows it. */
export function shownBar(f: Figure): string {
  if (f.bar === undefined) return "–";
  const bar = f.bar.text ?? `${SYMBOL[f.bar.op]} ${number(f.bar.value, 3, 0)}${f.bar.unit ?? ""}`;
  return f.bar.issue === undefined ? bar : `${bar} (issue ${f.bar.issue})`;
}

/** Whether the figure meets its bar: `met`, `not met`, `not judged: <why>`, or `–` without a bar. */
export function verdict(f: Figure): string {
  if (f.bar === undefined) return "–";
  if (f.judged === false) return `not judged: ${f.reason ?? "see its section"}`;
  if (f.value === undefined) throw new Error(`${f.target}: a figure with a bar needs a value to compare`);
  const { op, value } = f.bar;
  const met = op === ">=" ? f.value >= value : op === "<=" ? f.value <= value : f.value < value;
  return met ? "met" : "**not met**";
}

function cell(text: string): string {
  return text.replaceAll("|", "\\|");
}

function where(f: Figure): string {
  const links = resultPaths([f]).map((p) => `[${p}](results/${p})`);
  if (f.commit !== undefined) links.push(`commit ${f.commit}`);
  return links.join(", ") || "–";
}

/** The table of every current figure, unformatted. */
export function figuresTable(figures: readonly Figure[]): string {
  const head = ["target", "metric", "figure", "bar", "meets it", "before (tree)", "command", "output", "measured"];
  const rows = figures.map((f) => [
    f.target,
    f.metric,
    shownFigure(f),
    shownBar(f),
    f.why === undefined ? verdict(f) : `${verdict(f)} ([why](#${f.why}))`,
    f.before === undefined ? "–" : f.against === undefined ? f.before : `${f.before} (${f.against})`,
    `\`${f.command}\``,
    where(f),
    f.date,
  ]);
  return [head, head.map(() => "---"), ...rows].map((r) => `| ${r.map(cell).join(" | ")} |`).join("\n");
}

/** `readme` with the figures' table rendered between its markers and formatted as the repository formats Markdown. */
export async function withFigures(readme: string, figures: readonly Figure[], path = README_PATH): Promise<string> {
  const start = readme.indexOf(OPEN);
  const end = readme.indexOf(CLOSE);
  if (start < 0 || end < start) throw new Error(`no ${OPEN} ... ${CLOSE} markers in ${path}`);
  const next = `${readme.slice(0, start + OPEN.length)}\n\n${figuresTable(figures)}\n\n${readme.slice(end)}`;
  const options = (await resolveConfig(path)) ?? {};
  return format(next, { ...options, filepath: path });
}

async function main(): Promise<void> {
  const figures = parseFigures(readFileSync(FIGURES_PATH, "utf8"));
  const missing = resultPaths(figures).filter((p) => !existsSync(new URL(`../bench/results/${p}`, import.meta.url)));
  if (missing.length > 0) throw new Error(`bench/results/current.json cites output that is not there: ${missing.join(", ")}`);
  const before = readFileSync(README_PATH, "utf8");
  const after = await withFigures(before, figures);
  writeFileSync(README_PATH, after);
  console.log(after === before ? "bench/README.md: the figures are current" : "bench/README.md: the figures rewritten");
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
