#!/usr/bin/env node
// Entry point of the `leasehold` command. It runs the built JavaScript in
// dist/ (what the published package has, and what `npm ci` in a checkout
// builds): built code is what production runs, and it is cheaper per request
// than the sources through tsx, whose esbuild wraps every closure it creates
// in a naming call (bench/README.md, "Runtime v3"). In a checkout whose
// src/ has a file newer than dist/'s entry point (an edit since the last
// build), or no dist/ at all, it runs the TypeScript sources through tsx's
// loader instead, so that a stale dist/ never hides a change.
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const source = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const built = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));
// The same built modules in one file (scripts/bundle-cli.ts, run by `npm run build`): loading them one by
// one took a quarter of the CPU of a start from snapshots. Used only when made after dist/'s entry point.
const bundle = fileURLToPath(new URL("../dist/cli/main.bundle.js", import.meta.url));

/** Whether some file under `dir` was modified after `sinceMs`. */
function changedSince(dir, sinceMs) {
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && statSync(join(entry.parentPath ?? entry.path, entry.name)).mtimeMs > sinceMs) return true;
  }
  return false;
}

const fromSource = existsSync(source) && (!existsSync(built) || changedSince(join(source, "../.."), statSync(built).mtimeMs));
if (fromSource) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(source);
} else {
  await import(existsSync(bundle) && statSync(bundle).mtimeMs >= statSync(built).mtimeMs ? bundle : built);
}
