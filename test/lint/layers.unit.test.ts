/**
 * The layer rules of eslint.layers.js catch what they are for: an import
 * that points up a layer, a client import of server code, and an import
 * cycle; and they let the downward imports the design allows through.
 * Linted with only those rules (no type information), on probe text placed
 * in the real tree, so imports resolve to the project's real files.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { ESLint, type Linter } from "eslint";
import importX from "eslint-plugin-import-x";
import tseslint from "typescript-eslint";
import { afterAll, describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");
const { layerRules } = (await import(pathToFileURL(join(root, "eslint.layers.js")).href)) as {
  layerRules: (plugin: unknown) => Linter.Config;
};
/** A linter with only the layer rules, for the files below `cwd`. */
function layerLinter(cwd: string): ESLint {
  return new ESLint({
    cwd,
    overrideConfigFile: true,
    overrideConfig: [{ files: ["**/*.ts"], languageOptions: { parser: tseslint.parser }, ...layerRules(importX) }],
  });
}
const eslint = layerLinter(root);

/** The rule ids of the errors in `code`, linted as if it were the file at `path` (relative to the root). */
async function errorsOf(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, path) });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

/** The rule ids of the errors in a probe at `path` that imports `name` from `from` (and exports it, so it is used). */
function errorsOfImport(path: string, name: string, from: string): Promise<string[]> {
  return errorsOf(path, `import { ${name} } from "${from}";\nexport { ${name} };\n`);
}

// The first lint parses the graph of imports behind the probe (cycles are looked for through it).
describe("layer rules", { timeout: 60_000 }, () => {
  it("refuse an upward import: events importing the actor runtime", async () => {
    expect(await errorsOfImport("src/events/probe.ts", "ActorRuntime", "../actors/actor-runtime.ts")).toEqual([
      "import-x/no-restricted-paths",
    ]);
  });

  it("keep the thread pipe below the projections: src/threads importing a projection is refused, a projection importing the pipe is not", async () => {
    expect(await errorsOfImport("src/threads/probe.ts", "FoldStore", "../projections/fold-store.ts")).toEqual([
      "import-x/no-restricted-paths",
    ]);
    expect(await errorsOfImport("src/projections/probe.ts", "pipeToWorker", "../threads/worker-pipe.ts")).toEqual([]);
  });

  it("refuse the shared runtime importing a kind: an actor importing the lock's endpoint table", async () => {
    expect(await errorsOfImport("src/actors/probe.ts", "lockEndpoints", "../lock/endpoints.ts")).toEqual(["import-x/no-restricted-paths"]);
  });

  it("keep kinds apart: a lock uses sessions only through src/session/index.ts, and a session never imports a lock", async () => {
    expect(await errorsOfImport("src/lock/probe.ts", "sessionLiveAt", "../session/state.ts")).toEqual(["import-x/no-restricted-paths"]);
    expect(await errorsOfImport("src/lock/probe.ts", "sessionLiveAt", "../session/index.ts")).toEqual([]);
    expect(await errorsOfImport("src/session/probe.ts", "lockLogic", "../lock/logic.ts")).toEqual(["import-x/no-restricted-paths"]);
  });

  it("let the envelope read each kind's event schemas, and nothing else of a kind", async () => {
    expect(await errorsOfImport("src/events/probe.ts", "isLockEvent", "../lock/events.ts")).toEqual([]);
    expect(await errorsOfImport("src/events/probe.ts", "lockLogic", "../lock/logic.ts")).toEqual(["import-x/no-restricted-paths"]);
  });

  it("refuse the client importing anything but the contract", async () => {
    expect(await errorsOfImport("src/client/probe.ts", "MemoryEventLog", "../events/memory-event-log.ts")).toEqual([
      "import-x/no-restricted-paths",
    ]);
    expect(await errorsOfImport("src/client/probe.ts", "STATUS", "../contract/errors.ts")).toEqual([]);
  });

  it("let downward imports through: a kind importing the runtime and a shared projection", async () => {
    const code =
      'import { ActorRuntime } from "../actors/actor-runtime.ts";\nimport { ProjectedReadModel } from "../projections/read-model.ts";\nexport { ActorRuntime, ProjectedReadModel };\n';
    expect(await errorsOf("src/route/probe.ts", code)).toEqual([]);
  });

  describe("an import cycle", () => {
    const dir = mkdtempSync(join(tmpdir(), "leasehold-cycle-"));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it("is an error", async () => {
      writeFileSync(join(dir, "a.ts"), 'import { b } from "./b.ts";\nexport const a = () => b;\n');
      writeFileSync(join(dir, "b.ts"), 'import { a } from "./a.ts";\nexport const b = () => a;\n');
      const results = await layerLinter(dir).lintFiles([join(dir, "a.ts")]);
      expect(results[0]?.messages.map((m) => m.ruleId)).toEqual(["import-x/no-cycle"]);
    });
  });
});
