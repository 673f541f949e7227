/**
 * Every dependency with an install script is named in package.json's
 * `allowScripts` (npm 11.16 warns about one that is not, npm 12 skips its
 * script), and docs/dependencies.md says why each is allowed or not.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), "utf8");

describe("install scripts", () => {
  it("every dependency with one is allowed or denied in package.json, and docs/dependencies.md names it", () => {
    const lock = JSON.parse(read("package-lock.json")) as { packages: Record<string, { hasInstallScript?: boolean }> };
    const withScripts = new Set(
      Object.entries(lock.packages)
        .filter(([, entry]) => entry.hasInstallScript === true)
        .map(([path]) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length)),
    );
    const { allowScripts } = JSON.parse(read("package.json")) as { allowScripts?: Record<string, boolean> };
    expect(withScripts.size).toBeGreaterThan(0);
    expect(Object.keys(allowScripts ?? {}).sort()).toEqual([...withScripts].sort());
    const dependencies = read("docs/dependencies.md");
    for (const name of withScripts) expect(dependencies).toContain(name);
  });
});
