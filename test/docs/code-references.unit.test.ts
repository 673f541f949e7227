/**
 * The documentation names code that exists: every repository path a Markdown
 * file cites (`src/...`, `test/...`, `bench/...`, `scripts/...`,
 * `examples/...`, `docs/...`) is there, and every symbol it names with its
 * file is declared in that file. A symbol is named with its file in one of
 * these forms, so that a rename fails here instead of leaving the docs behind:
 *
 *   `src/transport/endpoint.ts#endpointServer`   (a member: `src/x.ts#Class.method`)
 *   `endpointServer` in `src/transport/endpoint.ts`
 *   `src/transport/endpoint.ts`'s `endpointServer`
 *   `src/transport/endpoint.ts` — `endpointServer` ...   (a step of a walkthrough)
 *
 * A walkthrough wrapped in `<!-- walkthrough: <what> -->` and
 * `<!-- /walkthrough -->` must also name each of its source files with the
 * symbol that does its step, in at most {@link MAX_WALKTHROUGH_FILES} files.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The most source files a walkthrough may take to follow one request. */
export const MAX_WALKTHROUGH_FILES = 12;

/** A repository path in prose or code: a known top folder, then path characters, ending on a word character or a slash. */
const PATH = String.raw`(?:src|test|bench|scripts|examples|docs)/[\w./@-]*[\w/]`;
const SYMBOL = String.raw`[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)?`;

/** One place where the docs name a symbol of a file. */
export interface SymbolReference {
  readonly path: string;
  readonly symbol: string;
}

/** Every repository path `text` cites, placeholders (`<kind>`, globs) left out. */
export function citedPaths(text: string): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(/(?<![\w./-])(?:src|test|bench|scripts|examples|docs)\/[\w./@-]*/g)) {
    // A path running into a placeholder or a glob names many files, or none yet; a sentence's full stop is not part of it.
    if (/[<*{]/.test(text.charAt(m.index + m[0].length))) continue;
    const path = m[0].replace(/[.@-]+$/, "");
    if (path.includes("/")) found.add(path);
  }
  return [...found];
}

/** Every symbol `text` names together with its file, in the forms above. */
export function symbolReferences(text: string): SymbolReference[] {
  const forms = [
    new RegExp(String.raw`\`(?<path>${PATH})#(?<symbol>${SYMBOL})\``, "g"),
    new RegExp(String.raw`\`(?<symbol>${SYMBOL})(?:\(\))?\` in \`(?<path>${PATH})\``, "g"),
    new RegExp(String.raw`\`(?<path>${PATH})\`['’]s \`(?<symbol>${SYMBOL})(?:\(\))?\``, "g"),
    new RegExp(String.raw`\`(?<path>${PATH})\` — \`(?<symbol>${SYMBOL})(?:\(\))?\``, "g"),
  ];
  // A reference may wrap onto the next line.
  const flat = text.replace(/\s*\n\s*/g, " ");
  return forms.flatMap((form) => [...flat.matchAll(form)].map((m) => ({ path: m.groups!.path!, symbol: m.groups!.symbol! })));
}

/** Is `name` declared in `source`: a function, class, type, variable, enum, or a member (method, property, accessor)? */
export function declares(source: string, name: string): boolean {
  const n = name.replace(/\$/g, "\\$");
  const declaration = new RegExp(String.raw`\b(?:function\*?|class|interface|type|const|let|var|enum|namespace)\s+${n}\b`);
  const member = new RegExp(
    String.raw`^\s*(?:(?:export|public|private|protected|static|readonly|async|override|abstract|declare|get|set)\s+)*\*?${n}\s*[?!]?\s*[(<:=]`,
    "m",
  );
  const reexport = new RegExp(String.raw`\bexport\s*\{[^}]*\b${n}\b`);
  return declaration.test(source) || member.test(source) || reexport.test(source);
}

/** The walkthrough sections of `text`: what each follows, and its text. */
export function walkthroughs(text: string): { what: string; body: string }[] {
  return [...text.matchAll(/<!-- walkthrough: (.+?) -->([\s\S]*?)<!-- \/walkthrough -->/g)].map((m) => ({ what: m[1]!, body: m[2]! }));
}

/** What is wrong with one walkthrough: too many source files, or a source file named without the symbol that does its step. */
export function walkthroughProblems(body: string): string[] {
  const files = citedPaths(body).filter((p) => p.startsWith("src/") && p.endsWith(".ts"));
  const named = new Set(symbolReferences(body).map((r) => r.path));
  const problems = files.filter((f) => !named.has(f)).map((f) => `${f} is named without the symbol that does its step`);
  if (files.length > MAX_WALKTHROUGH_FILES) problems.push(`${files.length} source files, more than ${MAX_WALKTHROUGH_FILES}`);
  return problems;
}

function repositoryMarkdown(): string[] {
  const out = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.md"], {
    cwd: ROOT,
    encoding: "utf8",
  });
  // bench/results/ records what was measured, in the tree of its day: its paths are history, not references.
  return out.split("\0").filter((f) => f !== "" && !f.startsWith("bench/results/") && existsSync(join(ROOT, f)));
}

/** Paths git ignores (generated output such as bench/results/): cited as where a command writes, not as code. */
function ignored(path: string): boolean {
  try {
    execFileSync("git", ["check-ignore", "-q", "--no-index", path], { cwd: ROOT });
    return true;
  } catch {
    return false;
  }
}

const markdown = repositoryMarkdown();

describe("code the documentation names", () => {
  it("reads the documents", () => {
    expect(markdown).toEqual(expect.arrayContaining(["README.md", "docs/design.md", "docs/glossary.md", "bench/README.md"]));
  });

  it.each(markdown)("every path %s cites exists", (file) => {
    const text = readFileSync(join(ROOT, file), "utf8");
    const missing = citedPaths(text).filter((p) => !existsSync(join(ROOT, p)) && !ignored(p));
    expect(missing).toEqual([]);
  });

  it.each(markdown)("every symbol %s names with its file is declared there", (file) => {
    const text = readFileSync(join(ROOT, file), "utf8");
    const wrong: string[] = [];
    for (const { path, symbol } of symbolReferences(text)) {
      const where = join(ROOT, path);
      if (!existsSync(where) || !statSync(where).isFile()) {
        wrong.push(`${path}#${symbol}: no such file`);
        continue;
      }
      const source = readFileSync(where, "utf8");
      for (const part of symbol.split(".")) if (!declares(source, part)) wrong.push(`${path}#${symbol}: ${part} is not declared there`);
    }
    expect(wrong).toEqual([]);
  });

  it.each(markdown)("every walkthrough in %s takes few files, each named with its step's symbol", (file) => {
    const text = readFileSync(join(ROOT, file), "utf8");
    const problems = walkthroughs(text).flatMap(({ what, body }) => walkthroughProblems(body).map((p) => `${what}: ${p}`));
    expect(problems).toEqual([]);
  });
});

describe("the reference checker itself", () => {
  it("finds cited paths but not placeholders, globs or sentence ends", () => {
    expect(citedPaths("see `src/a/b.ts`, src/c.ts. and src/actors/<kind>/decide.ts, src/tools/audit/*.ts, bench/results/x/")).toEqual([
      "src/a/b.ts",
      "src/c.ts",
      "bench/results/x/",
    ]);
  });

  it("finds a symbol named with its file in every form, across a line break", () => {
    const text = [
      "`src/a.ts#run` and `src/b.ts#Box.open`,",
      "`parse()` in `src/c.ts`, `src/d.ts`'s `evolve`,",
      "1. `src/e.ts` — `execute` puts it in the mailbox; `src/f.ts`'s",
      "   `decide`; `src/g.ts` — parses the body (no symbol here)",
    ].join("\n");
    expect(symbolReferences(text)).toEqual(
      expect.arrayContaining([
        { path: "src/a.ts", symbol: "run" },
        { path: "src/b.ts", symbol: "Box.open" },
        { path: "src/c.ts", symbol: "parse" },
        { path: "src/d.ts", symbol: "evolve" },
        { path: "src/e.ts", symbol: "execute" },
        { path: "src/f.ts", symbol: "decide" },
      ]),
    );
    expect(symbolReferences(text)).toHaveLength(6);
  });

  it("knows declarations and members from mere mentions", () => {
    const source = [
      "export function evolve(s) {}",
      "export class Box {",
      "  private readonly size = 1;",
      "  async open(x: number): Promise<void> {}",
      "}",
      "const sum = 1; // calls decide(x)",
    ].join("\n");
    for (const name of ["evolve", "Box", "size", "open", "sum"]) expect(declares(source, name), name).toBe(true);
    expect(declares(source, "decide")).toBe(false);
    expect(declares(source, "Bo")).toBe(false);
  });

  it("holds a walkthrough to its file count and to a symbol per file", () => {
    const steps = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1}. \`src/s${i}.ts#step${i}\``).join("\n");
    expect(walkthroughProblems(steps(MAX_WALKTHROUGH_FILES))).toEqual([]);
    expect(walkthroughProblems(steps(MAX_WALKTHROUGH_FILES + 1))).toEqual([
      `${MAX_WALKTHROUGH_FILES + 1} source files, more than ${MAX_WALKTHROUGH_FILES}`,
    ]);
    expect(walkthroughProblems(`${steps(2)}\n3. \`src/x.ts\` replies`)).toEqual([
      "src/x.ts is named without the symbol that does its step",
    ]);
    expect(walkthroughs("a <!-- walkthrough: lock.acquire -->\nbody\n<!-- /walkthrough --> b")).toEqual([
      { what: "lock.acquire", body: "\nbody\n" },
    ]);
  });
});
