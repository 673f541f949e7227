/**
 * `npm run build`, after tsc: bundles the command line as built in dist/
 * (dist/cli/main.js and the modules of dist/ it imports) into one module,
 * dist/cli/main.bundle.js, which bin/leasehold.js runs when it is current.
 * Loaded one by one, those modules (ours, zod's ninety-odd, the NATS client's
 * CommonJS files) took a quarter of the CPU of a start from snapshots
 * (bench/README.md, "A start"). Each module keeps its own import.meta.url, so
 * its worker entries and files are found beside it as before. The other
 * packages stay imports. Without esbuild (a devDependency) nothing is
 * bundled, and the command line runs dist/ as built.
 */
import { readFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { Plugin } from "esbuild";

const root = fileURLToPath(new URL("../", import.meta.url));
const entry = join(root, "dist/cli/main.js");
const outfile = join(root, "dist/cli/main.bundle.js");

const esbuild = await import("esbuild").catch(() => undefined);
if (esbuild === undefined) {
  console.warn("bundle-cli: esbuild is not installed; the command line runs dist/ module by module");
  process.exit(0);
}

const pkg = JSON.parse(await readFile(join(root, "package.json"), "utf8")) as {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};
/** Bundled with our modules: many small modules each (zod has some ninety), or CommonJS resolved file by file (the NATS client). */
const bundled = (name: string): boolean => name === "zod" || name === "xstate" || name.startsWith("@nats-io/");
const external = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).filter((name) => !bundled(name));

/** Every module of dist/ keeps its own URL: `import.meta.url` becomes its file's, as seen from the bundle. */
const ownUrls: Plugin = {
  name: "own-import-meta-url",
  setup(b) {
    b.onLoad({ filter: /\/dist\/.*\.js$/ }, async (args) => {
      const contents = await readFile(args.path, "utf8");
      if (!contents.includes("import.meta.url")) return { contents, loader: "js" as const };
      const path = relative(dirname(outfile), args.path);
      const url = `new URL(${JSON.stringify(path.startsWith(".") ? path : `./${path}`)}, import.meta.url).href`;
      return { contents: contents.replaceAll("import.meta.url", url), loader: "js" as const };
    });
  },
};

await esbuild.build({
  entryPoints: [entry],
  outfile,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: [...external, ...external.map((name) => `${name}/*`), "esbuild"],
  plugins: [ownUrls],
  // The NATS client is CommonJS: its require() of node's modules needs one in the bundle.
  banner: {
    js: 'import { createRequire as bundleCreateRequire } from "node:module"; const require = bundleCreateRequire(import.meta.url);',
  },
  logLevel: "warning",
});
