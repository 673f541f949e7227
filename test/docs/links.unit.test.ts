/**
 * The documentation stands alone: every relative link in every Markdown file
 * of the repository resolves to a file inside it (and, with an anchor, to a
 * heading there), and no file points at material that lives outside the
 * repository.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Files git tracks or would track (untracked but not ignored), as paths relative to the root. */
function repositoryFiles(): string[] {
  const out = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "-z"], { cwd: ROOT, encoding: "utf8" });
  return [...new Set(out.split("\0").filter((f) => f !== "" && existsSync(join(ROOT, f))))];
}

/** Lines outside fenced code blocks. */
function prose(text: string): string[] {
  let fenced = false;
  return text.split("\n").filter((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  });
}

/** The anchors GitHub gives the headings of a Markdown file. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const line of prose(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n === 0 ? base : `${base}-${n}`);
  }
  return result;
}

/** Every link target of a Markdown file (inline links and images, code spans removed). */
export function links(text: string): string[] {
  const targets: string[] = [];
  for (const line of prose(text)) {
    const withoutCode = line.replace(/`[^`]*`/g, "");
    for (const m of withoutCode.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) targets.push(m[1]!);
  }
  return targets;
}

const markdown = repositoryFiles().filter((f) => f.endsWith(".md"));

describe("Markdown links", () => {
  it("finds the documents", () => {
    expect(markdown).toEqual(expect.arrayContaining(["README.md", "docs/protocol.md", "docs/design.md"]));
  });

  it.each(markdown)("every relative link in %s resolves inside the repository", (file) => {
    const text = readFileSync(join(ROOT, file), "utf8");
    const broken: string[] = [];
    for (const target of links(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      const [path, anchor] = target.split("#", 2) as [string, string | undefined];
      const absolute = path === "" ? join(ROOT, file) : resolve(dirname(join(ROOT, file)), decodeURIComponent(path));
      const inside = relative(ROOT, absolute);
      if (inside.startsWith("..") || resolve(ROOT, inside) !== absolute) {
        broken.push(`${target}: outside the repository`);
        continue;
      }
      if (!existsSync(absolute)) {
        broken.push(`${target}: no such file`);
        continue;
      }
      if (anchor !== undefined && anchor !== "" && absolute.endsWith(".md") && statSync(absolute).isFile()) {
        if (!anchors(readFileSync(absolute, "utf8")).has(anchor)) broken.push(`${target}: no heading #${anchor}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe("self-contained repository", () => {
  // Built from pieces so that this file does not match its own patterns.
  const outside = new RegExp(
    ["\\.\\./" + "shared", "(^|[^a-z/])see" + "ds/", "DESIGN" + "\\.md", "PROTOCOL" + "\\.md", "CONVENTIONS" + "\\.md"].join("|"),
  );

  it("no file refers to material outside the repository", () => {
    const offenders: string[] = [];
    for (const file of repositoryFiles()) {
      if (file === "test/docs/links.unit.test.ts") continue;
      if (/\.(png|jpe?g|gif|ico|tgz|gz)$/.test(file) || file === "package-lock.json" || file === "LICENSE") continue;
      const lines = readFileSync(join(ROOT, file), "utf8").split("\n");
      lines.forEach((line, i) => {
        if (outside.test(line)) offenders.push(`${file}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offenders).toEqual([]);
  });

  it("the README fits on a few screens", () => {
    expect(readFileSync(join(ROOT, "README.md"), "utf8").split("\n").length).toBeLessThanOrEqual(300);
  });
});

describe("the link checker itself", () => {
  it("makes GitHub's anchors", () => {
    expect([
      ...anchors("# A b\n## HTTP: `--http <host:port>`\n```\n# not a heading\n```\n## A b\n### The order of `route.acquire`"),
    ]).toEqual(["a-b", "http---http-hostport", "a-b-1", "the-order-of-routeacquire"]);
  });

  it("finds links and images but not code", () => {
    expect(links('see [a](x.md#y), ![i](img/p.png "t") and `[no](z.md)`\n```\n[no](w.md)\n```')).toEqual(["x.md#y", "img/p.png"]);
  });
});
