#!/usr/bin/env node
// Entry point of the `leasehold` command. Runs the TypeScript sources through
// tsx's loader so that `npm ci` is all a checkout needs; a built copy in dist/
// is used instead when present (npm run build).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const built = fileURLToPath(new URL("../dist/cli/main.js", import.meta.url));
if (existsSync(built)) {
  await import(built);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/main.ts");
}
